package tasks

import (
	"testing"

	"github.com/fifoworker/fifoworker/pkg/task"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"
)

// A name registered twice is refused: the list, unlike a map literal, does
// not make it a compile error.
func TestANameRegisteredTwiceIsRefused(t *testing.T) {
	t.Parallel()
	cfg := Config{Articles: dynamodb.New(dynamodb.Options{}), ArticlesTable: "articles"}
	twice := []registration{registered[0], {"other", nil, alone(checkWordCountSpec), as(NewWordCount)}, registered[0]}
	_, err := newRegistry(cfg, twice)
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "export is registered twice")
	_, err = newChecker(twice)
	require.ErrorIs(t, err, ErrInvalidConfig, "intake's checker too")
	require.ErrorContains(t, err, "export is registered twice")
	once := twice[:2]
	_, err = newRegistry(cfg, once)
	require.NoError(t, err)
	_, err = newChecker(once)
	require.NoError(t, err)
}

// The export refuses a key that another registered task reads and it does
// not, whatever the task: the keys come from the other registrations, not
// from a list the export keeps. A third task with a key "zz" makes the
// export refuse {"zz": ...}, in the worker's registry and in intake's
// checker alike; a key the export reads itself (page_size), or "task",
// is not refused for being another task's too.
func TestTheExportRefusesTheKeyOfAnyOtherRegisteredTask(t *testing.T) {
	t.Parallel()
	cfg := Config{Articles: dynamodb.New(dynamodb.Options{}), ArticlesTable: "articles"}
	third := registration{"third", []string{task.SpecTask, "zz", SpecPageSize}, alone(checkWordCountSpec), as(NewWordCount)}
	regs := append(append([]registration(nil), registered...), third)
	r, err := newRegistry(cfg, regs)
	require.NoError(t, err)
	c, err := newChecker(regs)
	require.NoError(t, err)
	for name, check := range map[string]task.SpecCheck{"registry": r.ValidateSpec, "checker": c.ValidateSpec} {
		for _, spec := range []map[string]string{{"zz": "1"}, {task.SpecTask: NameExport, "zz": "1"}} {
			err := check(spec)
			require.ErrorIs(t, err, ErrInvalidSpec, "%s %v", name, spec)
			require.ErrorContains(t, err, `the export does not read "zz", a key of task third`, "%s %v", name, spec)
		}
		require.NoError(t, check(map[string]string{SpecPageSize: "5", "source": "articles"}), name)
		require.ErrorContains(t, check(map[string]string{SpecFields: "body"}), "a key of task wordcount", name)
	}
	// Without the third task, "zz" is a key no task reads: the export's.
	r, err = newRegistry(cfg, registered)
	require.NoError(t, err)
	require.NoError(t, r.ValidateSpec(map[string]string{"zz": "1"}))
}
