package demo

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// passing is a summary of a run on SQS where every invariant held.
func passing() Summary {
	return Summary{Jobs: 10, Completed: 9, Cancelled: 1, DuplicateIntents: 1, StaleAcceptsRejected: 1, OrphansSwept: 1,
		GroupsHeld: 1, Parked: 3, Redriven: 3, OrderKept: true, Transport: "sqs", Store: "dynamodb", Skipped: []string{}}
}

// A run is ok only when every invariant held and every part ran, on
// either transport: a skipped part is not a passed one.
func TestASummaryIsOKOnlyWhenWhatItCheckedHeld(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"sqs", "kafka"} {
		s := passing()
		s.Transport = transport
		require.True(t, s.ok(), transport)
	}
	for name, edit := range map[string]func(*Summary){
		"a view behind":              func(s *Summary) { s.ViewMismatches = 1 },
		"a job lost":                 func(s *Summary) { s.Lost = 1 },
		"a job unaccounted for":      func(s *Summary) { s.Jobs = 11 },
		"A's late accept taken":      func(s *Summary) { s.StaleAcceptsRejected = 0 },
		"no group held":              func(s *Summary) { s.GroupsHeld = 0 },
		"order not kept":             func(s *Summary) { s.OrderKept = false },
		"two redriven":               func(s *Summary) { s.Redriven = 2 },
		"a part skipped":             func(s *Summary) { s.Skipped = []string{"quarantine"} },
		"nothing completed":          func(s *Summary) { s.Completed, s.Failed = 0, 9 },
		"a failure not the policy's": func(s *Summary) { s.FailedUnexpectedly = 1 },
		"on Kafka, no group held": func(s *Summary) {
			s.Transport, s.GroupsHeld, s.Parked, s.Redriven, s.OrderKept = "kafka", 0, 0, 0, false
		},
	} {
		s := passing()
		edit(&s)
		require.False(t, s.ok(), name)
	}
}

// The summary's JSON names its transport, its store and what was
// skipped, an empty list included, for a script to check.
func TestTheSummaryLineNamesItsTransportAndWhatWasSkipped(t *testing.T) {
	t.Parallel()
	line, err := json.Marshal(passing())
	require.NoError(t, err)
	require.Contains(t, string(line), `"transport":"sqs","store":"dynamodb","skipped":[],"ok":false`)
	s := passing()
	s.Transport, s.Store, s.Skipped, s.OK = "kafka", "postgres", []string{"a part"}, true
	line, err = json.Marshal(s)
	require.NoError(t, err)
	require.Contains(t, string(line), `"transport":"kafka","store":"postgres","skipped":["a part"],"ok":true`)
}
