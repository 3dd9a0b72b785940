package lambdawire

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// The spool settings are checked at cold start, each bound at exactly its
// value: EPHEMERAL_STORAGE_MB set, within Lambda's 512 to 10,240;
// MAX_CANDIDATE_BYTES from 1 to a single PutObject's 5 GiB, and small
// enough that every lane of a batch (the commands mapping's BatchSize, 10)
// fits the spool budget, 90% of the ephemeral storage, at once: ten lanes
// build, nine are refused with an error that names both variables and the
// smallest storage that fits.
func TestWorkerSpoolSettingsAreCheckedAtColdStart(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Load("../../template.yaml")
	require.NoError(t, err)
	base := templateEnv(t, tpl, "WorkerFunction")
	budget512 := SpoolBudget(512)
	require.EqualValues(t, 460_800_000, budget512)
	lane512 := budget512 / 10 // the largest candidate ten lanes of 512 MB hold
	lane10240 := SpoolBudget(10240) / 10
	for _, tc := range []struct {
		mb, maxBytes string // "" leaves the variable out
		problem      string // "" builds
	}{
		{mb: "512", maxBytes: fmt.Sprint(lane512)},
		{mb: "512", maxBytes: fmt.Sprint(lane512 + 1), problem: "MAX_CANDIDATE_BYTES: 46080001 bytes fit 9 times in the spool of EPHEMERAL_STORAGE_MB=512 (90%: 460800000 bytes), " +
			"fewer than a batch's 10 lanes (the commands mapping's BatchSize): the lanes beyond would wait out each invocation, every receive counted toward QUARANTINE_AFTER_RECEIVES; " +
			"raise EPHEMERAL_STORAGE_MB to 513, or lower MAX_CANDIDATE_BYTES to 46080000"},
		{mb: "512", maxBytes: fmt.Sprint(budget512 + 1), problem: "fit 0 times in the spool of EPHEMERAL_STORAGE_MB=512"},
		{mb: "512", maxBytes: "", problem: "134217728 bytes fit 3 times in the spool of EPHEMERAL_STORAGE_MB=512"},
		{mb: "512", maxBytes: "", problem: "raise EPHEMERAL_STORAGE_MB to 1492, or lower MAX_CANDIDATE_BYTES to 46080000"},
		{mb: "", maxBytes: "1000", problem: "EPHEMERAL_STORAGE_MB is not set"},
		{mb: "1492", maxBytes: ""},
		{mb: "1491", maxBytes: "", problem: "fit 9 times in the spool of EPHEMERAL_STORAGE_MB=1491 (90%: 1341900000 bytes)"},
		{mb: "511", maxBytes: "1000", problem: `EPHEMERAL_STORAGE_MB="511" is not an integer in [512, 10240]`},
		{mb: "10240", maxBytes: fmt.Sprint(lane10240)},
		{mb: "10240", maxBytes: fmt.Sprint(lane10240 + 1), problem: "no EPHEMERAL_STORAGE_MB up to 10240 fits ten of them: lower MAX_CANDIDATE_BYTES to 921600000"},
		{mb: "9000", maxBytes: fmt.Sprint(candidate.MaxSize), problem: "no EPHEMERAL_STORAGE_MB up to 10240 fits ten of them: lower MAX_CANDIDATE_BYTES to 810000000 (921600000 with EPHEMERAL_STORAGE_MB=10240)"},
		{mb: "10241", maxBytes: "1000", problem: `EPHEMERAL_STORAGE_MB="10241" is not an integer in [512, 10240]`},
		{mb: "10240", maxBytes: fmt.Sprint(candidate.MaxSize + 1), problem: `MAX_CANDIDATE_BYTES="5368709121" is not an integer in [1, 5368709120]`},
		{mb: "512", maxBytes: "1"},
		{mb: "512", maxBytes: "0", problem: `MAX_CANDIDATE_BYTES="0" is not an integer in [1, 5368709120]`},
	} {
		env := maps.Clone(base)
		for k, v := range map[string]string{"EPHEMERAL_STORAGE_MB": tc.mb, "MAX_CANDIDATE_BYTES": tc.maxBytes} {
			delete(env, k)
			if v != "" {
				env[k] = v
			}
		}
		_, err := Worker(startup.NewEnvFrom(env), aws.Config{Region: "eu-west-1"}, slog.New(slog.DiscardHandler))
		if tc.problem == "" {
			require.NoError(t, err, "%+v", tc)
			continue
		}
		require.ErrorContains(t, err, tc.problem, "%+v", tc)
		require.ErrorContains(t, err, "misconfigured function")
	}
}

// The store the worker gets follows the settings: candidates of at most
// MAX_CANDIDATE_BYTES (one byte more is refused), and budget / max size
// of them spooled at once: with the largest max size ten lanes hold, ten
// take their room at once and an eleventh waits.
func TestWorkerCandidatesFollowTheSettings(t *testing.T) {
	t.Parallel()
	mem, err := s3mem.New(s3mem.Config{Buckets: []string{"bucket"}})
	require.NoError(t, err)
	key, err := candidate.NewKey("job-42", 1, "a", "txt")
	require.NoError(t, err)

	store := workerCandidates(startup.NewEnvFrom(map[string]string{"EPHEMERAL_STORAGE_MB": "512", "MAX_CANDIDATE_BYTES": "1000"}), mem, "bucket", slog.New(slog.DiscardHandler))
	w, err := store.Create(t.Context(), key)
	require.NoError(t, err)
	_, err = w.Write(make([]byte, 1000))
	require.NoError(t, err)
	_, err = w.Write([]byte{0})
	require.ErrorIs(t, err, candidate.ErrTooLarge)
	require.NoError(t, w.Close())

	synctest.Test(t, func(t *testing.T) {
		var logs strings.Builder
		tenth := SpoolBudget(512) / lanesPerBatch
		store := workerCandidates(startup.NewEnvFrom(map[string]string{"EPHEMERAL_STORAGE_MB": "512", "MAX_CANDIDATE_BYTES": fmt.Sprint(tenth)}),
			mem, "bucket", slog.New(slog.NewTextHandler(&logs, nil)))
		for range lanesPerBatch {
			r, err := store.Reserve(t.Context())
			require.NoError(t, err)
			require.False(t, r.Waited())
			defer r.Release()
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err = store.Reserve(ctx)
		require.ErrorIs(t, err, candidate.ErrSpoolBusy, "an eleventh waits")
		require.Contains(t, logs.String(), "level=INFO msg=\"worker: candidates' spool\" ephemeral_storage_mb=512 spool_budget=460800000 max_candidate_bytes=46080000 lanes_at_once=10")
	})
}

// template.yaml's defaults let every lane of a batch spool at once, so no
// lane waits: the budget of the default ephemeral storage holds ten
// candidates of the default MaxCandidateBytes, ten being the commands
// mapping's BatchSize. The wiring's own default bound is the template's.
func TestTemplateSpoolDefaultsSpoolEveryLaneOfABatch(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Load("../../template.yaml")
	require.NoError(t, err)
	num := func(v any) int64 {
		var n int64
		_, err := fmt.Sscan(fmt.Sprint(v), &n)
		require.NoError(t, err)
		return n
	}
	storage := num(tpl.Parameters["WorkerEphemeralStorage"].Default)
	maxBytes := num(tpl.Parameters["MaxCandidateBytes"].Default)
	require.EqualValues(t, DefaultMaxCandidateBytes, maxBytes)
	require.GreaterOrEqual(t, SpoolBudget(int(storage))/maxBytes, int64(lanesPerBatch))
	events, _ := tpl.Resources["WorkerFunction"].Properties["Events"].(map[string]any)
	commands, _ := events["Commands"].(map[string]any)
	props, _ := commands["Properties"].(map[string]any)
	require.EqualValues(t, lanesPerBatch, num(props["BatchSize"]))

	var logs strings.Builder
	env := startup.NewEnvFrom(templateEnv(t, tpl, "WorkerFunction"))
	mem, err := s3mem.New(s3mem.Config{Buckets: []string{"b"}})
	require.NoError(t, err)
	require.NotNil(t, workerCandidates(env, mem, "b",
		slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, env.Err(), "the cold start's check of the spool takes the template's defaults")
	require.Contains(t, logs.String(), "level=INFO")
	require.Contains(t, logs.String(), "lanes_at_once=10")
}
