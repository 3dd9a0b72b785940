package demo

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// passing is a summary of a run on SQS where every invariant held.
func passing() Summary {
	return Summary{Jobs: 10, Completed: 9, Cancelled: 1, DuplicateIntents: 1, StaleAcceptsRejected: 1, OrphansSwept: 1,
		GroupsHeld: 1, Parked: 3, Redriven: 3, OrderKept: true, Transport: "sqs", Skipped: []string{}}
}

// A run is ok only when every invariant it checked held: on SQS the
// poison job's too, on Kafka (where it is skipped, the quarantine not being
// built) its fields must be zero, so that a skipped check can never be
// read as a passed one, nor a run that did it as one that did not.
func TestASummaryIsOKOnlyWhenWhatItCheckedHeld(t *testing.T) {
	t.Parallel()
	require.True(t, passing().ok())
	for name, edit := range map[string]func(*Summary){
		"a view behind":              func(s *Summary) { s.ViewMismatches = 1 },
		"a job lost":                 func(s *Summary) { s.Lost = 1 },
		"a job unaccounted for":      func(s *Summary) { s.Jobs = 11 },
		"A's late accept taken":      func(s *Summary) { s.StaleAcceptsRejected = 0 },
		"no group held":              func(s *Summary) { s.GroupsHeld = 0 },
		"order not kept":             func(s *Summary) { s.OrderKept = false },
		"two redriven":               func(s *Summary) { s.Redriven = 2 },
		"quarantine skipped on SQS":  func(s *Summary) { s.Skipped = []string{"quarantine"} },
		"nothing completed":          func(s *Summary) { s.Completed, s.Failed = 0, 9 },
		"a failure not the policy's": func(s *Summary) { s.FailedUnexpectedly = 1 },
	} {
		s := passing()
		edit(&s)
		require.False(t, s.ok(), name)
	}

	kafka := passing()
	kafka.Transport, kafka.Skipped = "kafka", []string{"quarantine"}
	kafka.GroupsHeld, kafka.Parked, kafka.Redriven, kafka.OrderKept = 0, 0, 0, false
	require.True(t, kafka.ok())
	kafka.Parked = 3
	require.False(t, kafka.ok(), "a skipped check that reports a result")
}

// The summary's JSON names its transport and what was skipped, an empty
// list included, for a script to check.
func TestTheSummaryLineNamesItsTransportAndWhatWasSkipped(t *testing.T) {
	t.Parallel()
	line, err := json.Marshal(passing())
	require.NoError(t, err)
	require.Contains(t, string(line), `"transport":"sqs","skipped":[],"ok":false`)
	s := passing()
	s.Transport, s.Skipped, s.OK = "kafka", []string{"quarantine"}, true
	line, err = json.Marshal(s)
	require.NoError(t, err)
	require.Contains(t, string(line), `"transport":"kafka","skipped":["quarantine"],"ok":true`)
}
