package jobs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// tr is a history entry at minute v of a fixed day.
func tr(v int64, s jobs.Status, g int64, event string) jobs.Transition {
	return jobs.Transition{Version: v, Status: s, Generation: g, Event: event,
		At: time.Date(2026, 11, 3, 9, int(v), 0, 0, time.UTC)}
}

// Each transition decide makes is told from the entry before it, and the
// first entry of a history cut short (bounded, or begun on a legacy item)
// from itself as far as it can be.
func TestDescribeTellsEachTransitionFromTheOneBefore(t *testing.T) {
	t.Parallel()
	const (
		pend, run, done, fail, canc = jobs.StatusPending, jobs.StatusRunning, jobs.StatusCompleted, jobs.StatusFailed, jobs.StatusCancelled
	)
	for _, c := range []struct {
		name    string
		history []jobs.Transition
		want    []string
	}{{
		name: "a full life",
		history: []jobs.Transition{
			tr(0, pend, 0, jobs.MessageRun), tr(1, pend, 0, jobs.MessageRun), tr(2, run, 1, jobs.EventStarted),
			tr(3, run, 1, jobs.EventProgress), tr(4, run, 1, jobs.MessageRun), tr(5, run, 2, jobs.EventStarted),
			tr(6, done, 2, jobs.EventCompleted),
		},
		want: []string{"created", "nudged", "claimed", "renewed", "lease ran out → requeued",
			"lease ran out → taken over", "completed"},
	}, {
		name: "a failure by the holder, then none to tell",
		history: []jobs.Transition{
			tr(0, pend, 0, jobs.MessageRun), tr(1, run, 1, jobs.EventStarted), tr(2, fail, 1, jobs.EventFailed),
		},
		want: []string{"created", "claimed", "failed"},
	}, {
		name: "a takeover beyond the recovery policy",
		history: []jobs.Transition{
			tr(7, run, 3, jobs.EventProgress), tr(8, fail, 4, jobs.EventFailed),
		},
		want: []string{"renewed", "lease ran out → failed"},
	}, {
		name:    "cancellations",
		history: []jobs.Transition{tr(0, pend, 0, jobs.MessageRun), tr(1, canc, 1, jobs.EventCancelled)},
		want:    []string{"created", "cancelled"},
	}, {
		name: "entries without their events (built by hand)",
		history: []jobs.Transition{
			tr(0, pend, 0, ""), tr(1, run, 1, ""), tr(2, run, 1, ""), tr(3, run, 2, ""),
		},
		want: []string{"created", "claimed", "renewed", "lease ran out → taken over"},
	}, {
		name: "a history cut short: the first entry has no predecessor",
		history: []jobs.Transition{
			tr(21, run, 3, jobs.EventStarted), tr(22, run, 3, jobs.EventProgress),
		},
		want: []string{"lease ran out → taken over", "renewed"},
	}, {
		name: "a gap: the entry after it is read alone",
		history: []jobs.Transition{
			tr(3, run, 1, jobs.EventStarted), tr(9, run, 2, jobs.EventProgress),
		},
		want: []string{"claimed", "renewed"},
	}, {
		name: "a failure after a gap is not taken for the recovery policy's",
		history: []jobs.Transition{
			tr(3, run, 1, jobs.EventProgress), tr(5, fail, 2, jobs.EventFailed),
		},
		want: []string{"renewed", "failed"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			steps := jobs.Describe(c.history)
			require.Len(t, steps, len(c.history))
			got := make([]string, 0, len(steps))
			for i, s := range steps {
				require.Equal(t, c.history[i], s.Transition, "a step keeps its entry")
				got = append(got, s.String())
			}
			require.Equal(t, c.want, got)
		})
	}
}

func TestDescribeOfNoHistoryIsNoSteps(t *testing.T) {
	t.Parallel()
	require.Empty(t, jobs.Describe(nil))
}
