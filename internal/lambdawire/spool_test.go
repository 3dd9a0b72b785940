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

	"github.com/fifoworker/fifoworker/internal/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/candidate/candidatetest"
)

// The spool settings are checked at cold start, each bound at exactly its
// value: EPHEMERAL_STORAGE_MB within Lambda's 512 to 10,240;
// MAX_CANDIDATE_BYTES from 1 to a single PutObject's 5 GiB, and at most
// the spool budget, 90% of the ephemeral storage, an error that names both
// variables.
func TestWorkerSpoolSettingsAreCheckedAtColdStart(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Load("../../template.yaml")
	require.NoError(t, err)
	base := templateEnv(t, tpl, "WorkerFunction")
	budget512 := SpoolBudget(512)
	require.EqualValues(t, 460_800_000, budget512)
	for _, tc := range []struct {
		mb, maxBytes string // "" leaves the variable out
		problem      string // "" builds
	}{
		{mb: "", maxBytes: ""},
		{mb: "512", maxBytes: fmt.Sprint(budget512)},
		{mb: "512", maxBytes: fmt.Sprint(budget512 + 1), problem: "MAX_CANDIDATE_BYTES: 460800001 bytes do not fit the spool of EPHEMERAL_STORAGE_MB=512 (90%: 460800000 bytes)"},
		{mb: "", maxBytes: fmt.Sprint(budget512 + 1), problem: "EPHEMERAL_STORAGE_MB=512"},
		{mb: "511", maxBytes: "1000", problem: `EPHEMERAL_STORAGE_MB="511" is not an integer in [512, 10240]`},
		{mb: "10240", maxBytes: fmt.Sprint(candidate.MaxSize)},
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
		_, err := Worker(NewEnvFrom(env), aws.Config{Region: "eu-west-1"}, slog.New(slog.DiscardHandler))
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
// of them spooled at once (the next waits); fewer than a batch's ten
// lanes is logged as a warning.
func TestWorkerCandidatesFollowTheSettings(t *testing.T) {
	t.Parallel()
	mem := candidatetest.NewMemoryS3([]string{"bucket"})
	key, err := candidate.NewKey("job-42", 1, "a", "txt")
	require.NoError(t, err)

	store := workerCandidates(NewEnvFrom(map[string]string{"MAX_CANDIDATE_BYTES": "1000"}), mem, "bucket", slog.New(slog.DiscardHandler))
	w, err := store.Create(t.Context(), key)
	require.NoError(t, err)
	_, err = w.Write(make([]byte, 1000))
	require.NoError(t, err)
	_, err = w.Write([]byte{0})
	require.ErrorIs(t, err, candidate.ErrTooLarge)
	require.NoError(t, w.Close())

	synctest.Test(t, func(t *testing.T) {
		var logs strings.Builder
		third := SpoolBudget(512) / 3
		store := workerCandidates(NewEnvFrom(map[string]string{"EPHEMERAL_STORAGE_MB": "512", "MAX_CANDIDATE_BYTES": fmt.Sprint(third)}),
			mem, "bucket", slog.New(slog.NewTextHandler(&logs, nil)))
		for range 3 {
			r, err := store.Reserve(t.Context())
			require.NoError(t, err)
			defer r.Release()
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err = store.Reserve(ctx)
		require.ErrorIs(t, err, candidate.ErrSpoolBusy, "a fourth lane waits")
		require.Contains(t, logs.String(), "level=WARN msg=\"worker: candidates' spool\" ephemeral_storage_mb=512 spool_budget=460800000 max_candidate_bytes=153600000 lanes_at_once=3")
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
	require.NotNil(t, workerCandidates(NewEnvFrom(templateEnv(t, tpl, "WorkerFunction")), candidatetest.NewMemoryS3([]string{"b"}), "b",
		slog.New(slog.NewTextHandler(&logs, nil))))
	require.Contains(t, logs.String(), "level=INFO")
	require.Contains(t, logs.String(), "lanes_at_once=10")
}
