package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/candidate"
)

// The bug guard before an accept: only the attempt's own key, in the form
// the job records, may be accepted.
func TestOwnCandidateRefusesEveryOtherKey(t *testing.T) {
	t.Parallel()
	own := candidate.Key{JobID: "job-42", Generation: 2, AttemptID: "req-b_msg-1", Ext: "ndjson"}
	require.NoError(t, ownCandidate(own, own))
	for name, got := range map[string]candidate.Key{
		"another job":        {JobID: "job-7", Generation: 2, AttemptID: "req-b_msg-1", Ext: "ndjson"},
		"another generation": {JobID: "job-42", Generation: 1, AttemptID: "req-b_msg-1", Ext: "ndjson"},
		"another attempt":    {JobID: "job-42", Generation: 2, AttemptID: "req-a_msg-1", Ext: "ndjson"},
		"another extension":  {JobID: "job-42", Generation: 2, AttemptID: "req-b_msg-1", Ext: "json"},
		"not a key":          {JobID: "job/42", Generation: 2, AttemptID: "req-b_msg-1", Ext: "ndjson"},
	} {
		require.ErrorIs(t, ownCandidate(got, own), ErrForeignCandidate, name)
	}
}
