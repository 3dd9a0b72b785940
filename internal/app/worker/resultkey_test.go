package worker_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// TestCandidateKeysAreTheKeysJobsAccepts holds pkg/candidate's key format
// and pkg/jobs' result-key rule (which may not import pkg/candidate) to
// the same keys: the worker accepts the key candidate.Key.String gives, so
// if the two drifted apart every accept would be refused. Each key is
// accepted for its own job, generation and attempt, and for no other.
func TestCandidateKeysAreTheKeysJobsAccepts(t *testing.T) {
	t.Parallel()
	for _, k := range []candidate.Key{
		{JobID: "job-42", Generation: 1, AttemptID: "req-1_msg-1", Ext: "ndjson"},
		{JobID: "job-42", Generation: 2, AttemptID: "attempt-b", Ext: "json"},
		{JobID: "a", Generation: 12345, AttemptID: "A_b-9", Ext: "7z"},
		{JobID: "job_x-Y", Generation: candidate.MaxGeneration, AttemptID: "x", Ext: "abcdefghijklmnop"},
	} {
		require.NoError(t, k.Validate())
		key := k.String()
		require.NoError(t, jobs.ValidateResultKey(key, k.JobID, k.Generation, k.AttemptID), key)
		parsed, err := candidate.ParseKey(key)
		require.NoError(t, err)
		require.Equal(t, k, parsed)

		require.ErrorIs(t, jobs.ValidateResultKey(key, k.JobID+"0", k.Generation, k.AttemptID), jobs.ErrInvalid, "another job: %s", key)
		require.ErrorIs(t, jobs.ValidateResultKey(key, k.JobID, k.Generation-1, k.AttemptID), jobs.ErrInvalid, "another generation: %s", key)
		require.ErrorIs(t, jobs.ValidateResultKey(key, k.JobID, k.Generation, k.AttemptID+"0"), jobs.ErrInvalid, "another attempt: %s", key)
	}
	// An extension candidate refuses, jobs refuses too.
	for _, ext := range []string{"JSON", "a.b", "abcdefghijklmnopq", ""} {
		_, err := candidate.NewKey("job-42", 1, "a", ext)
		require.ErrorIs(t, err, candidate.ErrInvalidKey, ext)
		key := "candidates/job-42/g0000000001/a." + ext
		require.ErrorIs(t, jobs.ValidateResultKey(key, "job-42", 1, "a"), jobs.ErrInvalid, key)
	}
	// A generation beyond the key's ten digits has no key in either.
	_, err := candidate.NewKey("job-42", candidate.MaxGeneration+1, "a", "json")
	require.ErrorIs(t, err, candidate.ErrInvalidKey)
	require.ErrorIs(t, jobs.ValidateResultKey("candidates/job-42/g10000000000/a.json", "job-42", candidate.MaxGeneration+1, "a"), jobs.ErrInvalid)
}
