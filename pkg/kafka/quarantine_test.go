package kafka_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/lanes/lanestest"
)

// A permanent failure holds its key and parks the record with every later
// record of its lane, in one Park call, in lane order; the lane's earlier
// records and the other lanes are untouched, and parked records are
// completed (the partition's commit moves past them).
func TestQuarantinePermanentFailureParksTheRestOfItsLane(t *testing.T) {
	t.Parallel()
	malformed := kafka.Permanent(errors.New("malformed value"))
	q := &fakeQuarantine{}
	r := runQuarantine(t, q, records(t, "t-0/1:a", "t-0/2:b", "t-0/3:a", "t-0/4", "t-0/5:a", "t-0/6:b", "t-0/7:a"),
		map[string]error{"t-0/3": malformed})

	require.Empty(t, r.resp.BatchItemFailures, "parked records are completed")
	require.ElementsMatch(t, []string{"t-0/1", "t-0/2", "t-0/3", "t-0/4", "t-0/6"}, r.started, "t-0/5 and t-0/7 are parked without running")
	require.Equal(t, []string{"check t-0/1 t-0/2 t-0/3 t-0/5 t-0/6 t-0/7"}, q.Of(""), "check gets the keyed records, in batch order")
	require.Equal(t, []string{"park t-0/3 t-0/5 t-0/7 hold"}, q.Of("a"))
	require.ErrorIs(t, q.Nth(t, "a", 0).Cause, malformed, "the key is held because of the handler's error")
	require.Empty(t, q.Of("b"))
	require.Equal(t, heldOn(0, 0), q.HoldOf("a"))
	require.Equal(t, map[string]kafka.Outcome{
		"t-0/1": kafka.Succeeded, "t-0/2": kafka.Succeeded, "t-0/3": kafka.Parked, "t-0/4": kafka.Succeeded,
		"t-0/5": kafka.Parked, "t-0/6": kafka.Succeeded, "t-0/7": kafka.Parked,
	}, r.outcomes())
}

// A hold made by a lane's first record parks the rest of the lane in the
// same call; a copy or a record Check said to drop, in between, is dropped.
func TestQuarantineHoldByTheFirstRecordParksTheWholeLane(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{view: kafka.QuarantineView{Records: dispositions(t, map[string]kafka.Disposition{
		"t-0/3": copyOf(1, 0),
		"t-0/5": {Drop: true, Reason: "a copy of a parked record already processed"},
	})}}
	r := runQuarantine(t, q, records(t, "t-0/1:a", "t-0/2:a", "t-0/3:a", "t-0/4:b", "t-0/5:a", "t-0/6:a"),
		map[string]error{"t-0/1": kafka.Permanent(errors.New("unknown command"))})

	require.Empty(t, r.resp.BatchItemFailures)
	require.ElementsMatch(t, []string{"t-0/1", "t-0/4"}, r.started)
	require.Equal(t, []string{"park t-0/1 t-0/2 t-0/6 hold"}, q.Of("a"))
	require.Equal(t, map[string]kafka.Outcome{
		"t-0/1": kafka.Parked, "t-0/2": kafka.Parked, "t-0/3": kafka.Dropped, "t-0/4": kafka.Succeeded, "t-0/5": kafka.Dropped, "t-0/6": kafka.Parked,
	}, r.outcomes())
}

// A record whose key's attempts count threshold-1 failures of that very
// record (partition and offset) is parked, with the rest of its lane,
// before it runs: its delivery is the threshold's attempt. Failures of
// another record, or of the same offset in another partition, do not
// count. The bound is exact: one failure fewer runs.
func TestQuarantineThresholdParksBeforeTheRecordRuns(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{view: kafka.QuarantineView{Holds: map[kafka.TopicKey]kafka.Hold{
		tk("a"): failedBefore(0, 2, testThreshold-1), // at the threshold
		tk("b"): failedBefore(0, 4, testThreshold-2), // one below: it runs
		tk("c"): failedBefore(0, 6, 7),               // above it
		tk("d"): failedBefore(0, 99, 7),              // another record of d
		tk("e"): failedBefore(1, 8, 7),               // the same offset, another partition
	}}}
	ev := records(t, "t-0/1:a", "t-0/2:a", "t-0/3:a", "t-0/4:b", "t-0/5:b", "t-0/6:c", "t-0/7:d", "t-0/8:e")
	r := runQuarantine(t, q, ev, nil)

	require.Empty(t, r.resp.BatchItemFailures)
	require.ElementsMatch(t, []string{"t-0/1", "t-0/4", "t-0/5", "t-0/7", "t-0/8"}, r.started)
	require.Equal(t, []string{"park t-0/2 t-0/3 hold"}, q.Of("a"))
	require.Equal(t, []string{"park t-0/6 hold"}, q.Of("c"))
	require.Empty(t, q.Of("b"))
	require.Empty(t, q.Of("d"))
	require.Empty(t, q.Of("e"))
	cause := q.Nth(t, "a", 0).Cause
	require.ErrorIs(t, cause, kafka.ErrQuarantineThreshold)
	require.Contains(t, cause.Error(), "(2 failed, attempt 3 is the threshold): busy before")
	require.Equal(t, kafka.Parked, r.outcomes()["t-0/2"])
	require.Zero(t, r.metrics.Records[1].Duration, "t-0/2 never ran")
}

// Each failed attempt of a keyed record is counted, once, with the hold
// the processor has; the failure that makes threshold-1 parks the record
// at once (its next attempt would be parked before it runs), so its
// partition goes on without another delivery. A permanent failure is
// parked uncounted.
func TestQuarantineCountsEachFailureAndParksAtTheThreshold(t *testing.T) {
	t.Parallel()
	busy := errors.New("busy")
	cases := []struct {
		name     string
		before   kafka.Hold
		fails    error
		calls    []string
		failed   []string
		outcome  kafka.Outcome
		attempts int
	}{
		{"the first failure", kafka.Hold{}, busy, []string{"failed t-0/1"}, []string{"t-0/1", "t-0/2"}, kafka.Failed, 1},
		{"a failure of another record before", failedBefore(0, 0, 2), busy, []string{"failed t-0/1"}, []string{"t-0/1", "t-0/2"}, kafka.Failed, 1},
		{"one below the threshold's", failedBefore(0, 1, testThreshold-3), busy, []string{"failed t-0/1"}, []string{"t-0/1", "t-0/2"}, kafka.Failed, testThreshold - 2},
		{"the threshold's", failedBefore(0, 1, testThreshold-2), busy, []string{"failed t-0/1", "park t-0/1 t-0/2 hold"}, []string{}, kafka.Parked, testThreshold - 1},
		{"a panic counts", failedBefore(0, 1, testThreshold-2), errPanics, []string{"failed t-0/1", "park t-0/1 t-0/2 hold"}, []string{}, kafka.Parked, testThreshold - 1},
		{"a permanent failure is not counted", kafka.Hold{}, kafka.Permanent(busy), []string{"park t-0/1 t-0/2 hold"}, []string{}, kafka.Parked, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &fakeQuarantine{view: kafka.QuarantineView{Holds: map[kafka.TopicKey]kafka.Hold{tk("a"): tc.before}}}
			r := runQuarantine(t, q, records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b"), map[string]error{"t-0/1": tc.fails})
			require.Equal(t, tc.calls, q.Of("a"))
			require.Equal(t, tc.failed, failed(r.resp))
			require.Equal(t, tc.outcome, r.outcomes()["t-0/1"])
			require.Equal(t, tc.attempts, q.HoldOf("a").Attempts.Of(&kafka.Record{Partition: 0, Offset: 1}))
			if errors.Is(tc.fails, busy) && !kafka.IsPermanent(tc.fails) {
				require.ErrorIs(t, q.Nth(t, "a", 0).Cause, busy, "the handler's error is the cause counted")
			}
			if tc.outcome == kafka.Parked && !kafka.IsPermanent(tc.fails) {
				cause := q.Nth(t, "a", 1).Cause
				require.ErrorIs(t, cause, kafka.ErrQuarantineThreshold)
				lines := r.lines(t, "t-0/1")
				require.Len(t, lines, 2, "the handler's line, then the parking's")
				require.NotEqual(t, "parked", lines[0]["outcome"])
				require.Equal(t, "parked", lines[1]["outcome"])
			}
		})
	}
}

// Only a record's own failure counts. A record delivered again because
// another key of its partition failed (head-of-line), one skipped after
// an earlier failure of its lane, or one skipped for the deadline, failed
// nothing, and no Failed call is made for it.
func TestQuarantineCountsNoRedeliveryCausedByAnotherRecord(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{}
	r := runQuarantine(t, q, records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b", "t-0/4:a"), map[string]error{"t-0/1": errors.New("busy")})
	require.Equal(t, []string{"t-0/1", "t-0/2", "t-0/4"}, failed(r.resp))
	require.Equal(t, []string{"failed t-0/1"}, q.Of("a"), "t-0/2 and t-0/4 were skipped, not failed")
	require.Empty(t, q.Of("b"))

	// The redelivery from t-0/1 (the stream reading of the commit) brings
	// b's completed t-0/3 again; it succeeds, and is not counted; a now
	// succeeds too.
	q2 := &fakeQuarantine{view: kafka.QuarantineView{Holds: map[kafka.TopicKey]kafka.Hold{tk("a"): q.HoldOf("a")}}}
	r = runQuarantine(t, q2, records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b", "t-0/4:a"), nil)
	require.Empty(t, r.resp.BatchItemFailures)
	require.Empty(t, q2.Of("a"))
	require.Empty(t, q2.Of("b"))
}

// A threshold of 2 parks a record after its first failure, at once.
func TestQuarantineThresholdOfTwo(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{}
	r := runQuarantine(t, q, records(t, "t-0/1:a"), map[string]error{"t-0/1": errors.New("busy")},
		func(c *kafka.Config) { c.QuarantineThreshold = 2 })
	require.Empty(t, r.resp.BatchItemFailures)
	require.Equal(t, []string{"t-0/1"}, r.started)
	require.Equal(t, []string{"failed t-0/1", "park t-0/1 hold"}, q.Of("a"))
}

// A held key's records are parked in one call, without a cause: they join
// what is parked. A copy of the hold's epoch is dropped (the key is not
// draining), so is a record Check said to drop. Attempts do not matter.
func TestQuarantineHeldKeyParksEveryOrdinaryRecord(t *testing.T) {
	t.Parallel()
	h := heldOn(0, 2)
	h.Attempts = kafka.Attempts{Offset: 6, Failed: 9}
	q := &fakeQuarantine{view: kafka.QuarantineView{
		Holds: map[kafka.TopicKey]kafka.Hold{tk("a"): h},
		Records: dispositions(t, map[string]kafka.Disposition{
			"t-0/3": copyOf(2, 1),
			"t-0/5": {Drop: true, Reason: "a redelivery of a record parked before its key's hold was released"},
		}),
	}}
	r := runQuarantine(t, q, records(t, "t-0/1:a", "t-0/2:b", "t-0/3:a", "t-0/4:a", "t-0/5:a", "t-0/6:a"), map[string]error{"t-0/1": errors.New("would fail")})

	require.Empty(t, r.resp.BatchItemFailures)
	require.Equal(t, []string{"t-0/2"}, r.started)
	require.Equal(t, []string{"park t-0/1 t-0/4 t-0/6"}, q.Of("a"))
	require.NoError(t, q.Nth(t, "a", 0).Cause)
	require.Equal(t, map[string]kafka.Outcome{
		"t-0/1": kafka.Parked, "t-0/2": kafka.Succeeded, "t-0/3": kafka.Dropped, "t-0/4": kafka.Parked, "t-0/5": kafka.Dropped, "t-0/6": kafka.Parked,
	}, r.outcomes())
}

// While a key drains, the copies of its epoch run in order, each the copy
// of the oldest parked record (Next), and each success is recorded with
// Done; an ordinary record before them is parked.
func TestQuarantineDrainingKeyRunsItsCopies(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{
		view: kafka.QuarantineView{
			Holds:   map[kafka.TopicKey]kafka.Hold{tk("a"): draining(4, 1)},
			Records: dispositions(t, map[string]kafka.Disposition{"t-0/11": copyOf(4, 1), "t-0/13": copyOf(4, 2)}),
		},
		after: map[string]kafka.Hold{"t-0/11": draining(4, 2)},
	}
	r := runQuarantine(t, q, records(t, "t-0/10:a", "t-0/11:a", "t-0/12:b", "t-0/13:a"), nil)

	require.Empty(t, r.resp.BatchItemFailures)
	require.Equal(t, []string{"t-0/11", "t-0/13"}, byLane(records(t, "t-0/10:a", "t-0/11:a", "t-0/12:b", "t-0/13:a"), r.started)["t-0:"+b64("a")])
	require.Equal(t, []string{"park t-0/10", "done t-0/11", "done t-0/13"}, q.Of("a"))
	require.Equal(t, map[string]kafka.Outcome{
		"t-0/10": kafka.Parked, "t-0/11": kafka.Succeeded, "t-0/12": kafka.Succeeded, "t-0/13": kafka.Succeeded,
	}, r.outcomes())
}

// The processor follows the hold each Done returns: released, the lane's
// later ordinary records run; still draining, they are parked, each Park
// taking the records up to the next copy that runs.
func TestQuarantineFollowsTheHoldDoneReturns(t *testing.T) {
	t.Parallel()
	view := func() kafka.QuarantineView {
		return kafka.QuarantineView{
			Holds:   map[kafka.TopicKey]kafka.Hold{tk("a"): draining(1, 1)},
			Records: dispositions(t, map[string]kafka.Disposition{"t-0/11": copyOf(1, 1), "t-0/14": copyOf(1, 2)}),
		}
	}
	batch := []string{"t-0/11:a", "t-0/12:a", "t-0/13:a", "t-0/14:a", "t-0/15:a"}
	cases := []struct {
		name     string
		after    map[string]kafka.Hold
		calls    []string
		started  []string
		outcomes map[string]kafka.Outcome
	}{
		{
			name:    "the first Done releases",
			after:   map[string]kafka.Hold{"t-0/11": {}},
			calls:   []string{"done t-0/11"},
			started: []string{"t-0/11", "t-0/12", "t-0/13", "t-0/15"},
			outcomes: map[string]kafka.Outcome{"t-0/11": kafka.Succeeded, "t-0/12": kafka.Succeeded, "t-0/13": kafka.Succeeded,
				"t-0/14": kafka.Dropped, "t-0/15": kafka.Succeeded},
		},
		{
			name:    "still draining",
			after:   map[string]kafka.Hold{"t-0/11": draining(1, 2)},
			calls:   []string{"done t-0/11", "park t-0/12 t-0/13", "done t-0/14", "park t-0/15"},
			started: []string{"t-0/11", "t-0/14"},
			outcomes: map[string]kafka.Outcome{"t-0/11": kafka.Succeeded, "t-0/12": kafka.Parked, "t-0/13": kafka.Parked,
				"t-0/14": kafka.Succeeded, "t-0/15": kafka.Parked},
		},
		{
			name:    "an operator held the key again",
			after:   map[string]kafka.Hold{"t-0/11": heldOn(0, 1)},
			calls:   []string{"done t-0/11", "park t-0/12 t-0/13 t-0/15"},
			started: []string{"t-0/11"},
			outcomes: map[string]kafka.Outcome{"t-0/11": kafka.Succeeded, "t-0/12": kafka.Parked, "t-0/13": kafka.Parked,
				"t-0/14": kafka.Dropped, "t-0/15": kafka.Parked},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &fakeQuarantine{view: view(), after: tc.after}
			r := runQuarantine(t, q, records(t, batch...), nil)
			require.Empty(t, r.resp.BatchItemFailures)
			require.Equal(t, tc.calls, q.Of("a"))
			require.Equal(t, tc.started, r.started)
			require.Equal(t, tc.outcomes, r.outcomes())
		})
	}
}

// A copy the processor cannot run is dropped, completed without running,
// and its parked record stays parked: a copy of another epoch, or one
// whose key is not draining. So is a record Check said to drop.
func TestQuarantineDropsWhatItMustNotRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		hold   kafka.Hold
		d      kafka.Disposition
		reason string
	}{
		{"a copy of an earlier epoch", draining(3, 1), copyOf(2, 1), "redriven copy of epoch 2 while the key is draining (epoch 3): its parked record stays parked"},
		{"a copy of a later epoch", draining(3, 1), copyOf(4, 1), "redriven copy of epoch 4 while the key is draining (epoch 3)"},
		{"a copy while the key is held", heldOn(0, 3), copyOf(3, 1), "redriven copy of epoch 3 while the key is held (epoch 3)"},
		{"a copy while the key is not held", kafka.Hold{}, copyOf(1, 1), "redriven copy of epoch 1 while the key is not_held"},
		{"a record to drop, key not held", kafka.Hold{}, kafka.Disposition{Drop: true, Reason: "already processed"}, "already processed"},
		{"a record to drop, key draining", draining(3, 1), kafka.Disposition{Drop: true, Reason: "discarded"}, "discarded"},
		{"a record to drop, key held on another partition", heldOn(1, 3), kafka.Disposition{Drop: true, Reason: "discarded"}, "discarded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Attempts past the threshold change nothing for a record that
			// does not run.
			h := tc.hold
			h.Attempts = kafka.Attempts{Offset: 9, Failed: 5}
			q := &fakeQuarantine{view: kafka.QuarantineView{
				Holds:   map[kafka.TopicKey]kafka.Hold{tk("a"): h},
				Records: dispositions(t, map[string]kafka.Disposition{"t-0/9": tc.d}),
			}}
			r := runQuarantine(t, q, records(t, "t-0/9:a"), nil)
			require.Empty(t, r.resp.BatchItemFailures)
			require.Empty(t, r.started)
			require.Empty(t, q.Of("a"))
			require.Equal(t, kafka.Dropped, r.outcomes()["t-0/9"])
			lines := r.lines(t, "t-0/9")
			require.Len(t, lines, 1)
			require.Equal(t, "INFO", lines[0]["level"])
			require.Equal(t, "dropped", lines[0]["outcome"])
			require.Contains(t, lines[0]["reason"], tc.reason)
		})
	}
}

// A redriven copy that fails permanently, or as often as the threshold
// allows, puts its key back on hold with a Park of no records (its own
// parked record stays parked) and is completed. The lane's later ordinary
// records are then parked and its later copies dropped.
func TestQuarantineCopyThatFailsAgainHoldsTheKeyAgain(t *testing.T) {
	t.Parallel()
	view := func(attempts kafka.Attempts) kafka.QuarantineView {
		h := draining(2, 1)
		h.Attempts = attempts
		return kafka.QuarantineView{
			Holds:   map[kafka.TopicKey]kafka.Hold{tk("a"): h},
			Records: dispositions(t, map[string]kafka.Disposition{"t-0/10": copyOf(2, 0), "t-0/11": copyOf(2, 1), "t-0/13": copyOf(2, 2)}),
		}
	}
	batch := []string{"t-0/10:a", "t-0/11:a", "t-0/12:a", "t-0/13:a", "t-0/14:a"}
	after := map[string]kafka.Hold{"t-0/10": draining(2, 1)}
	want := map[string]kafka.Outcome{"t-0/10": kafka.Succeeded, "t-0/11": kafka.Parked, "t-0/12": kafka.Parked, "t-0/13": kafka.Dropped, "t-0/14": kafka.Parked}

	t.Run("permanent failure", func(t *testing.T) {
		t.Parallel()
		again := kafka.Permanent(errors.New("still malformed"))
		q := &fakeQuarantine{view: view(kafka.Attempts{}), after: after}
		q.view.Holds[tk("a")] = draining(2, 0)
		r := runQuarantine(t, q, records(t, batch...), map[string]error{"t-0/11": again})
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"t-0/10", "t-0/11"}, r.started)
		require.Equal(t, []string{"done t-0/10", "park hold", "park t-0/12 t-0/14"}, q.Of("a"))
		require.ErrorIs(t, q.Nth(t, "a", 1).Cause, again)
		require.Equal(t, want, r.outcomes())
		require.Equal(t, kafka.Held, q.HoldOf("a").State)
		lines := r.lines(t, "t-0/11")
		require.Len(t, lines, 2, "the handler's line, then the re-hold's")
		require.Equal(t, "failed", lines[0]["outcome"])
		require.Equal(t, "parked", lines[1]["outcome"])
		require.Equal(t, "redriven copy failed again: permanent: still malformed", lines[1]["reason"])
	})
	t.Run("at the threshold before it runs", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: view(kafka.Attempts{Offset: 11, Failed: testThreshold - 1, Cause: "busy"}), after: after}
		q.view.Holds[tk("a")] = func() kafka.Hold { h := q.view.Holds[tk("a")]; h.Next = 0; return h }()
		r := runQuarantine(t, q, records(t, batch...), nil)
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"t-0/10"}, r.started, "a copy at the threshold does not run")
		require.Equal(t, []string{"done t-0/10", "park hold", "park t-0/12 t-0/14"}, q.Of("a"))
		require.ErrorIs(t, q.Nth(t, "a", 1).Cause, kafka.ErrQuarantineThreshold)
		require.Equal(t, want, r.outcomes())
		lines := r.lines(t, "t-0/11")
		require.Len(t, lines, 1)
		require.Contains(t, lines[0]["reason"], "redriven copy failed again: kafka: the record reached the quarantine threshold")
	})
	t.Run("its failure reaches the threshold", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: view(kafka.Attempts{Offset: 11, Failed: testThreshold - 2, Cause: "busy"}), after: after}
		q.view.Holds[tk("a")] = func() kafka.Hold { h := q.view.Holds[tk("a")]; h.Next = 0; return h }()
		r := runQuarantine(t, q, records(t, batch...), map[string]error{"t-0/11": errors.New("busy again")})
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"t-0/10", "t-0/11"}, r.started)
		require.Equal(t, []string{"done t-0/10", "failed t-0/11", "park hold", "park t-0/12 t-0/14"}, q.Of("a"))
		require.ErrorIs(t, q.Nth(t, "a", 2).Cause, kafka.ErrQuarantineThreshold)
		require.Contains(t, q.Nth(t, "a", 2).Cause.Error(), "busy again")
		require.Equal(t, want, r.outcomes())
	})
}

// Only the copy of the key's oldest parked record runs (Hold.Next). A copy
// of the epoch that stands for a later record holds the key again, as a
// copy that fails again does.
func TestQuarantineCopyOutOfOrderHoldsTheKeyAgain(t *testing.T) {
	t.Parallel()
	view := func(next int64) kafka.QuarantineView {
		return kafka.QuarantineView{
			Holds:   map[kafka.TopicKey]kafka.Hold{tk("a"): draining(3, next)},
			Records: dispositions(t, map[string]kafka.Disposition{"t-0/21": copyOf(3, 1), "t-0/22": copyOf(3, 2), "t-0/23": copyOf(3, 3)}),
		}
	}
	t.Run("the oldest copy was lost", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: view(1)}
		r := runQuarantine(t, q, records(t, "t-0/22:a", "t-0/23:a", "t-0/24:a", "t-0/25:b"), nil)
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"t-0/25"}, r.started, "no copy ran")
		require.Equal(t, []string{"park hold", "park t-0/24"}, q.Of("a"))
		cause := q.Nth(t, "a", 0).Cause
		require.ErrorIs(t, cause, kafka.ErrCopyOutOfOrder)
		require.Contains(t, cause.Error(), "the copy of offset 2 came while offset 1 is parked")
		require.Equal(t, map[string]kafka.Outcome{
			"t-0/22": kafka.Parked, "t-0/23": kafka.Dropped, "t-0/24": kafka.Parked, "t-0/25": kafka.Succeeded,
		}, r.outcomes())
	})
	t.Run("in order, each Done naming the next", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: view(1), after: map[string]kafka.Hold{"t-0/21": draining(3, 2), "t-0/22": draining(3, 3), "t-0/23": {}}}
		r := runQuarantine(t, q, records(t, "t-0/21:a", "t-0/22:a", "t-0/23:a", "t-0/24:a"), nil)
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"t-0/21", "t-0/22", "t-0/23", "t-0/24"}, r.started)
		require.Equal(t, []string{"done t-0/21", "done t-0/22", "done t-0/23"}, q.Of("a"))
	})
	t.Run("a copy written twice, its first run in this batch", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: kafka.QuarantineView{
			Holds:   map[kafka.TopicKey]kafka.Hold{tk("a"): draining(3, 1)},
			Records: dispositions(t, map[string]kafka.Disposition{"t-0/21": copyOf(3, 1), "t-0/22": copyOf(3, 1), "t-0/23": copyOf(3, 2)}),
		}, after: map[string]kafka.Hold{"t-0/21": draining(3, 2), "t-0/23": {}}}
		r := runQuarantine(t, q, records(t, "t-0/21:a", "t-0/22:a", "t-0/23:a"), nil)
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"t-0/21", "t-0/23"}, r.started, "the second copy of offset 1 is dropped, the key not held again")
		require.Equal(t, []string{"done t-0/21", "done t-0/23"}, q.Of("a"))
		require.Equal(t, kafka.Dropped, r.outcomes()["t-0/22"])
	})
	t.Run("the re-hold fails", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: view(1), script: failing("park", "error")}
		r := runQuarantine(t, q, records(t, "t-0/22:a", "t-0/23:a", "t-0/24:a"), nil)
		require.Equal(t, []string{"t-0/22", "t-0/23", "t-0/24"}, failed(r.resp), "delivered again, in order; none ran")
		require.Empty(t, r.started)
	})
}

// A transient failure or a panic is what it is without the quarantine, but
// for its count: the record and the rest of its lane are reported and the
// quarantine hears of nothing else. Null-key records are not quarantined.
func TestQuarantineTransientFailureIsAnOrdinaryFailure(t *testing.T) {
	t.Parallel()
	does := map[string]error{"t-0/3": errors.New("busy"), "t-0/2": errPanics}
	specs := []string{"t-0/1:a", "t-0/2:b", "t-0/3:a", "t-0/4:c", "t-0/5:b", "t-0/6:a", "t-0/7", "t-0/8:c"}
	plain := runQuarantine(t, nil, records(t, specs...), does, func(c *kafka.Config) {
		c.Quarantine, c.QuarantineThreshold, c.Concurrency = nil, 0, 1
	})
	q := &fakeQuarantine{}
	r := runQuarantine(t, q, records(t, specs...), does, func(c *kafka.Config) { c.Concurrency = 1 })
	require.Equal(t, []string{"t-0/2", "t-0/3", "t-0/5", "t-0/6"}, failed(plain.resp))
	require.Equal(t, failed(plain.resp), failed(r.resp))
	require.Equal(t, plain.started, r.started)
	require.Equal(t, plain.outcomes(), r.outcomes())
	require.Equal(t, []string{"check t-0/1 t-0/2 t-0/3 t-0/4 t-0/5 t-0/6 t-0/8"}, q.Of(""), "not t-0/7: it has no key")
	require.Equal(t, []string{"failed t-0/3"}, q.Of("a"))
	require.Equal(t, []string{"failed t-0/2"}, q.Of("b"))
	require.Contains(t, q.Nth(t, "b", 0).Cause.Error(), "handler panicked")
}

// Records without a key are not quarantined: Check does not see them, and
// a permanent failure among them is an ordinary failure.
func TestQuarantineLeavesNullKeysAlone(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{}
	r := runQuarantine(t, q, records(t, "t-0/1", "t-0/2:a", "t-0/3"), map[string]error{"t-0/1": kafka.Permanent(errors.New("malformed"))})
	require.Equal(t, []string{"t-0/1", "t-0/3"}, failed(r.resp))
	require.Equal(t, []string{"check t-0/2"}, q.Of(""))
	require.Equal(t, kafka.Failed, r.outcomes()["t-0/1"])

	t.Run("a batch without keys is not checked", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{script: func(qCall) error { panic("the quarantine was called") }}
		r := runQuarantine(t, q, records(t, "t-0/1", "t-0/2"), nil)
		require.Empty(t, r.resp.BatchItemFailures)
		require.Empty(t, q.Of(""))
	})
}

// The quarantine holds the lane key, which LaneKey may take from elsewhere
// than the record's key: the hold is the lane's.
func TestQuarantineHoldsTheLaneKey(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{}
	r := runQuarantine(t, q, records(t, "t-0/1:a", "t-0/2:b"), map[string]error{"t-0/1": kafka.Permanent(errors.New("bad"))},
		func(c *kafka.Config) {
			c.LaneKey = func(kafka.Record) (string, bool) { return "job-1", true }
		})
	require.Empty(t, r.resp.BatchItemFailures)
	require.Equal(t, []string{"park t-0/1 t-0/2 hold"}, q.Of("job-1"))
}

// Without the holds nothing keyed may run: a Check that fails, panics or
// ends its goroutine fails every keyed record of the batch. Null-key
// records run.
func TestQuarantineCheckFailureFailsEveryKeyedRecord(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"error", "panic", "goexit"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			q := &fakeQuarantine{script: failing("check", fault)}
			r := runFaulty(t, q, records(t, "t-0/1:a", "t-0/2:b", "t-0/3", "t-0/4:a"), nil)
			require.Equal(t, []string{"t-0/1", "t-0/2", "t-0/4"}, failed(r.resp))
			require.Equal(t, []string{"t-0/3"}, r.started)
			for _, id := range []string{"t-0/1", "t-0/2", "t-0/4"} {
				lines := r.lines(t, id)
				require.Len(t, lines, 1, id)
				require.Equal(t, "failed", lines[0]["outcome"])
				require.Contains(t, lines[0]["error"], "kafka: quarantine check: ")
				require.Contains(t, lines[0]["error"], faultText[fault])
			}
		})
	}
}

// A Park that fails, panics or ends its goroutine fails the records it was
// given (none is completed, so nothing is lost), and the rest of the lane
// is skipped; other lanes go on.
func TestQuarantineParkFailure(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"error", "panic", "goexit"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			t.Run("holding", func(t *testing.T) {
				t.Parallel()
				q := &fakeQuarantine{script: failing("park", fault)}
				r := runFaulty(t, q, records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b", "t-0/4:a"), map[string]error{"t-0/2": kafka.Permanent(errors.New("malformed"))})
				require.Equal(t, []string{"t-0/2", "t-0/4"}, failed(r.resp))
				require.Equal(t, []string{"park t-0/2 t-0/4 hold"}, q.Of("a"))
				require.Equal(t, kafka.Failed, r.outcomes()["t-0/2"])
				lines := r.lines(t, "t-0/2")
				require.Contains(t, lines[len(lines)-1]["error"], "permanent: malformed", "the handler's error is kept")
				require.Contains(t, lines[len(lines)-1]["error"], faultText[fault])
			})
			t.Run("draining", func(t *testing.T) {
				t.Parallel()
				q := &fakeQuarantine{script: failing("park", fault), view: kafka.QuarantineView{
					Holds:   map[kafka.TopicKey]kafka.Hold{tk("a"): draining(1, 1)},
					Records: dispositions(t, map[string]kafka.Disposition{"t-0/11": copyOf(1, 1)}),
				}}
				r := runFaulty(t, q, records(t, "t-0/10:a", "t-0/11:a", "t-0/12:b"), nil)
				require.Equal(t, []string{"t-0/10", "t-0/11"}, failed(r.resp))
				require.Equal(t, []string{"t-0/12"}, r.started, "no copy runs after a record before it was not parked")
				require.Equal(t, kafka.SkippedAfterFailure, r.outcomes()["t-0/11"])
			})
		})
	}
}

// A copy whose success cannot be recorded is reported, to run again, and
// the rest of the lane is skipped.
func TestQuarantineDoneFailureReportsTheCopy(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"error", "panic", "goexit"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			q := &fakeQuarantine{script: failing("done", fault), view: kafka.QuarantineView{
				Holds:   map[kafka.TopicKey]kafka.Hold{tk("a"): draining(1, 1)},
				Records: dispositions(t, map[string]kafka.Disposition{"t-0/11": copyOf(1, 1), "t-0/13": copyOf(1, 2)}),
			}}
			r := runFaulty(t, q, records(t, "t-0/11:a", "t-0/12:b", "t-0/13:a", "t-0/14:a"), nil)
			require.Equal(t, []string{"t-0/11", "t-0/13", "t-0/14"}, failed(r.resp))
			require.Equal(t, []string{"done t-0/11"}, q.Of("a"))
			lines := r.lines(t, "t-0/11")
			require.Len(t, lines, 2, "the handler's line, then the failure to record it")
			require.Equal(t, "succeeded", lines[0]["outcome"])
			require.Contains(t, lines[1]["error"], "the redriven copy ran, but recording it failed: "+faultText[fault])
		})
	}
}

// A failed attempt whose count cannot be written stays an ordinary
// failure: reported, the rest of its lane skipped, the write's failure
// logged with the handler's error.
func TestQuarantineFailedFailureKeepsTheFailure(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"error", "panic", "goexit"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			q := &fakeQuarantine{script: failing("failed", fault), view: kafka.QuarantineView{
				Holds: map[kafka.TopicKey]kafka.Hold{tk("a"): failedBefore(0, 1, testThreshold-2)},
			}}
			r := runFaulty(t, q, records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b"), map[string]error{"t-0/1": errors.New("busy")})
			require.Equal(t, []string{"t-0/1", "t-0/2"}, failed(r.resp))
			require.Equal(t, []string{"failed t-0/1"}, q.Of("a"), "nothing is parked on a count not written")
			lines := r.lines(t, "t-0/1")
			require.Len(t, lines, 1)
			require.Equal(t, "failed", lines[0]["outcome"])
			require.Contains(t, lines[0]["error"], "busy")
			require.Contains(t, lines[0]["error"], "kafka: count the failed attempt: "+faultText[fault])
		})
	}
}

// A parked record is completed, not a failure: under StopOnFirstFailure it
// stops nothing, even when its failure is what parks it at the threshold.
// A failure to park it does, and so does a failure under the threshold.
func TestQuarantineStopOnFirstFailure(t *testing.T) {
	t.Parallel()
	opts := func(c *kafka.Config) { c.StopOnFirstFailure, c.Concurrency = true, 1 } // a's lane first: it is longest
	specs := []string{"t-0/1:a", "t-0/2:b", "t-0/3:a"}
	t.Run("a parked permanent failure stops nothing", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{}
		r := runQuarantine(t, q, records(t, specs...), map[string]error{"t-0/1": kafka.Permanent(errors.New("bad"))}, opts)
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"t-0/1", "t-0/2"}, r.started)
	})
	t.Run("a failure parked at the threshold stops nothing", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: kafka.QuarantineView{Holds: map[kafka.TopicKey]kafka.Hold{tk("a"): failedBefore(0, 1, testThreshold-2)}}}
		r := runQuarantine(t, q, records(t, specs...), map[string]error{"t-0/1": errors.New("busy")}, opts)
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"t-0/1", "t-0/2"}, r.started)
	})
	t.Run("a failure under the threshold stops the batch", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{}
		r := runQuarantine(t, q, records(t, specs...), map[string]error{"t-0/1": errors.New("busy")}, opts)
		require.Equal(t, []string{"t-0/1", "t-0/2", "t-0/3"}, failed(r.resp))
		require.Equal(t, []string{"t-0/1"}, r.started)
		require.Equal(t, kafka.SkippedStopped, r.outcomes()["t-0/2"])
	})
	t.Run("a failure to park stops the batch", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{script: failing("park", "error")}
		r := runQuarantine(t, q, records(t, specs...), map[string]error{"t-0/1": kafka.Permanent(errors.New("bad"))}, opts)
		require.Equal(t, []string{"t-0/1", "t-0/2", "t-0/3"}, failed(r.resp))
		require.Equal(t, []string{"t-0/1"}, r.started)
	})
	// The record that failed is the only one the park names: its own
	// failure stops the batch, not a later record's.
	t.Run("a failure to park a lane's last record stops the batch", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{script: failing("park", "error")}
		r := runQuarantine(t, q, records(t, "t-0/1:a", "t-0/2:b"), map[string]error{"t-0/1": kafka.Permanent(errors.New("bad"))}, opts)
		require.Equal(t, []string{"t-0/1", "t-0/2"}, failed(r.resp))
		require.Equal(t, []string{"t-0/1"}, r.started)
		require.Equal(t, kafka.SkippedStopped, r.outcomes()["t-0/2"])
	})
	t.Run("a failure to hold the key again stops the batch", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{script: failing("park", "error"), view: kafka.QuarantineView{
			Holds:   map[kafka.TopicKey]kafka.Hold{tk("a"): draining(1, 1)},
			Records: dispositions(t, map[string]kafka.Disposition{"t-0/1": copyOf(1, 1)}),
		}}
		r := runQuarantine(t, q, records(t, "t-0/1:a", "t-0/2:b"), map[string]error{"t-0/1": kafka.Permanent(errors.New("bad again"))}, opts)
		require.Equal(t, []string{"park hold"}, q.Of("a"), "the copy failed again: its key is held again")
		require.Equal(t, []string{"t-0/1", "t-0/2"}, failed(r.resp))
		require.Equal(t, []string{"t-0/1"}, r.started)
		require.Equal(t, kafka.SkippedStopped, r.outcomes()["t-0/2"])
	})
	// A panic that reaches the threshold is parked; if parking it fails,
	// the record stays Panicked, as it was.
	t.Run("a panic whose park fails stays a panic", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{script: failing("park", "error"), view: kafka.QuarantineView{
			Holds: map[kafka.TopicKey]kafka.Hold{tk("a"): failedBefore(0, 1, testThreshold-2)},
		}}
		r := runQuarantine(t, q, records(t, "t-0/1:a", "t-0/2:b"), map[string]error{"t-0/1": errPanics}, opts)
		require.Equal(t, []string{"failed t-0/1", "park t-0/1 hold"}, q.Of("a"))
		require.Equal(t, kafka.Panicked, r.outcomes()["t-0/1"])
		require.Equal(t, kafka.SkippedStopped, r.outcomes()["t-0/2"])
	})
}

// Once less than the deadline margin remains, nothing starts: a copy that
// would run is skipped with the rest of its lane, which is neither parked
// nor counted. A held key's lane is still parked: that runs nothing.
func TestQuarantineDeadline(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var left atomic.Int64
	left.Store(int64(time.Minute))
	clock := func() time.Time { return deadline.Add(-time.Duration(left.Load())) }
	q := &fakeQuarantine{
		view: kafka.QuarantineView{
			Holds: map[kafka.TopicKey]kafka.Hold{tk("a"): draining(1, 1), tk("c"): heldOn(0, 1), tk("b"): failedBefore(0, 7, testThreshold-1)},
			Records: dispositions(t, map[string]kafka.Disposition{
				"t-0/1": copyOf(1, 1), "t-0/2": copyOf(1, 2), "t-0/3": {Drop: true},
			}),
		},
		after: map[string]kafka.Hold{"t-0/1": draining(1, 2)},
	}
	var rec recorder
	p := newProcessor(t, kafka.Config{Handler: func(ctx context.Context, r kafka.Record) error {
		rec.Start(name(r))
		if name(r) == "t-0/1" {
			left.Store(int64(500 * time.Millisecond)) // inside the 1 s margin
		}
		return nil
	}, Quarantine: q, QuarantineThreshold: testThreshold, Now: clock, Concurrency: 1})
	resp, err := p.Process(ctx, records(t, "t-0/1:a", "t-0/2:a", "t-0/3:a", "t-0/4:a", "t-0/5:c", "t-0/6:b", "t-0/7:b"))
	require.NoError(t, err)
	q.RequireSound(t)
	require.Equal(t, []string{"t-0/1"}, rec.Started())
	require.Equal(t, []string{"t-0/2", "t-0/3", "t-0/4", "t-0/6", "t-0/7"}, failed(resp))
	require.Equal(t, []string{"done t-0/1"}, q.Of("a"))
	require.Equal(t, []string{"park t-0/5"}, q.Of("c"))
	require.Empty(t, q.Of("b"), "t-0/7 is not parked ahead of t-0/6")
}

// Every record has one outcome in the metrics, and its log lines say what
// became of it.
func TestQuarantineOutcomesInMetricsAndLogs(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{view: kafka.QuarantineView{
		Holds:   map[kafka.TopicKey]kafka.Hold{tk("c"): heldOn(0, 1), tk("d"): draining(2, 1)},
		Records: dispositions(t, map[string]kafka.Disposition{"t-0/7": copyOf(1, 1), "t-0/8": copyOf(2, 1), "t-0/9": {Drop: true, Reason: "processed before"}}),
	}}
	r := runQuarantine(t, q, records(t, "t-0/1:a", "t-0/2:a", "t-0/3:a", "t-0/4:b", "t-0/5:c", "t-0/6:c", "t-0/7:d", "t-0/8:d", "t-0/9:d", "t-0/10:d", "t-0/11"),
		map[string]error{"t-0/2": kafka.Permanent(errors.New("malformed")), "t-0/4": errors.New("busy")}, func(c *kafka.Config) { c.Concurrency = 1 })
	require.Equal(t, []string{"t-0/4"}, failed(r.resp))
	want := map[string]kafka.Outcome{
		"t-0/1": kafka.Succeeded, "t-0/2": kafka.Parked, "t-0/3": kafka.Parked, "t-0/4": kafka.Failed,
		"t-0/5": kafka.Parked, "t-0/6": kafka.Parked, "t-0/7": kafka.Dropped, "t-0/8": kafka.Succeeded,
		"t-0/9": kafka.Dropped, "t-0/10": kafka.Parked, "t-0/11": kafka.Succeeded,
	}
	require.Equal(t, want, r.outcomes())
	require.Equal(t, 5, r.metrics.Count(kafka.Parked))
	require.Equal(t, 2, r.metrics.Count(kafka.Dropped))
	for rec, o := range want {
		lines := r.lines(t, rec)
		if rec == "t-0/2" {
			require.Len(t, lines, 2, rec)
			require.Equal(t, "failed", lines[0]["outcome"])
			require.Equal(t, "parked", lines[1]["outcome"])
			require.Equal(t, "permanent: malformed", lines[1]["reason"])
			continue
		}
		require.Len(t, lines, 1, rec)
		require.Equal(t, o.String(), lines[0]["outcome"], rec)
	}
	require.Equal(t, "its key is held", r.lines(t, "t-0/3")[0]["reason"])
	require.Equal(t, "its key is held", r.lines(t, "t-0/5")[0]["reason"])
	require.Equal(t, "its key is draining", r.lines(t, "t-0/10")[0]["reason"])
	require.Equal(t, "processed before", r.lines(t, "t-0/9")[0]["reason"])
	recs := r.logs.Records(t)
	require.EqualValues(t, 1, recs[len(recs)-1]["failed"], "parked and dropped records are not failures")
}

// A logger that panics on a parked record's line fails that record: it is
// delivered again, and parked again (parking is idempotent).
func TestQuarantineAPanickingLoggerOnAParkedLine(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	flaky := lanestest.HookHandler{Next: logs.Logger().Handler(), Fn: func(r slog.Record) {
		if recordOf(r) == "t-0/2" {
			panic("log bug")
		}
	}}
	q := &fakeQuarantine{view: kafka.QuarantineView{Holds: map[kafka.TopicKey]kafka.Hold{tk("a"): heldOn(0, 1)}}}
	p := newProcessor(t, kafka.Config{Handler: noop, Quarantine: q, QuarantineThreshold: testThreshold, Logger: slog.New(flaky)})
	resp, err := p.Process(context.Background(), records(t, "t-0/1:a", "t-0/2:a", "t-0/3:a"))
	require.NoError(t, err)
	q.RequireSound(t)
	require.Equal(t, []string{"t-0/2"}, failed(resp))
	require.Equal(t, []string{"park t-0/1 t-0/2 t-0/3"}, q.Of("a"))
}

// A handler that ends its goroutine with runtime.Goexit fails its record
// and the rest of its lane; nothing is counted, as for an invocation that
// crashes or times out (the mapping's retries bound those).
func TestQuarantineHandlerGoexit(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{view: kafka.QuarantineView{
		Holds:   map[kafka.TopicKey]kafka.Hold{tk("a"): draining(1, 1)},
		Records: dispositions(t, map[string]kafka.Disposition{"t-0/1": copyOf(1, 1)}),
	}}
	r := runFaulty(t, q, records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b"), map[string]error{"t-0/1": errGoexit})
	require.Equal(t, []string{"t-0/1", "t-0/2"}, failed(r.resp))
	require.Empty(t, q.Of("a"))
	require.Equal(t, kafka.Panicked, r.outcomes()["t-0/1"])
}

// The processor calls the quarantine with the handlers' context, which
// ends at the response reserve; but for counting a failure, which may use
// half the reserve (TestQuarantineCountsAFailureAtTheDeadline).
func TestQuarantineCallsGetTheHandlersContext(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var deadlines sync.Map
	q := &ctxQuarantine{Quarantine: &fakeQuarantine{}, seen: &deadlines}
	p := newProcessor(t, kafka.Config{
		Handler:    handlerOf(nil, map[string]any{"t-0/1": errors.New("busy"), "t-0/2": kafka.Permanent(errors.New("bad"))}),
		Quarantine: q, QuarantineThreshold: testThreshold, ResponseReserve: 300 * time.Millisecond,
	})
	_, err := p.Process(ctx, records(t, "t-0/1:a", "t-0/2:b"))
	require.NoError(t, err)
	for m, before := range map[string]time.Duration{"check": 300 * time.Millisecond, "park": 300 * time.Millisecond, "failed": 150 * time.Millisecond} {
		got, ok := deadlines.Load(m)
		require.True(t, ok, m)
		require.Equal(t, deadline.Add(-before), got, m)
	}
}

type ctxQuarantine struct {
	kafka.Quarantine
	seen *sync.Map
}

func (c *ctxQuarantine) note(ctx context.Context, method string) {
	dl, _ := ctx.Deadline()
	c.seen.Store(method, dl)
}

func (c *ctxQuarantine) Check(ctx context.Context, recs []kafka.KeyedRecord) (kafka.QuarantineView, error) {
	c.note(ctx, "check")
	return c.Quarantine.Check(ctx, recs)
}

func (c *ctxQuarantine) Park(ctx context.Context, key kafka.TopicKey, recs []*kafka.Record, cause error, hold bool) (kafka.Hold, error) {
	c.note(ctx, "park")
	return c.Quarantine.Park(ctx, key, recs, cause, hold)
}

func (c *ctxQuarantine) Failed(ctx context.Context, key kafka.TopicKey, hold kafka.Hold, rec *kafka.Record, cause error) (kafka.Attempts, error) {
	c.note(ctx, "failed")
	return c.Quarantine.Failed(ctx, key, hold, rec, cause)
}

// A key moved partition (the topic's partition count changed): a record
// of a held key read from another partition than the hold's is refused,
// neither parked (its offset is of another sequence) nor run, nor counted;
// it and the rest of its lane are reported. The key's records in the
// hold's partition are parked as usual.
func TestQuarantineRefusesAHeldKeysRecordFromAnotherPartition(t *testing.T) {
	t.Parallel()
	for _, state := range []kafka.Hold{heldOn(0, 1), draining(1, 1)} {
		t.Run(state.State.String(), func(t *testing.T) {
			t.Parallel()
			q := &fakeQuarantine{view: kafka.QuarantineView{
				Holds:   map[kafka.TopicKey]kafka.Hold{tk("a"): state},
				Records: dispositions(t, map[string]kafka.Disposition{"t-1/4": copyOf(1, 1)}),
			}}
			r := runQuarantine(t, q, records(t, "t-0/5:a", "t-1/3:a", "t-1/4:a", "t-1/5:b"), nil)
			require.Equal(t, []string{"t-1/3", "t-1/4"}, failed(r.resp))
			require.Equal(t, []string{"t-1/5"}, r.started)
			require.Equal(t, []string{"park t-0/5"}, q.Of("a"))
			lines := r.lines(t, "t-1/3")
			require.Len(t, lines, 1)
			require.Contains(t, lines[0]["error"], "from partition 0")
			require.Equal(t, kafka.Failed, r.outcomes()["t-1/3"])
			require.Equal(t, kafka.SkippedAfterFailure, r.outcomes()["t-1/4"], "a copy on another partition does not run either")
		})
	}
}

// A record that carries another partition count than the topic's
// (PartitionCountHeader against Config.PartitionCount) holds its key, with
// the rest of its lane, before it runs; with exactly the topic's count, or
// without the header, it runs. A redriven copy is sent to its hold's
// partition and runs whatever its count. Without a quarantine, such a
// record fails.
func TestQuarantinePartitionCountChangedHoldsTheKey(t *testing.T) {
	t.Parallel()
	const n = 6
	ev := func() events.KafkaEvent {
		e := records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b", "t-0/4:c", "t-0/5:d", "t-0/6:e", "t-0/7:f", "t-0/8:g")
		e = withHeader(e, kafka.PartitionCountHeader, "7", "t-0/1") // above
		e = withHeader(e, kafka.PartitionCountHeader, "5", "t-0/3") // below
		e = withHeader(e, kafka.PartitionCountHeader, "6", "t-0/4") // exactly
		e = withHeader(e, kafka.PartitionCountHeader, "x", "t-0/6") // not a number
		e = withHeader(e, kafka.PartitionCountHeader, "9", "t-0/7") // a copy
		e = withHeader(e, kafka.PartitionCountHeader, "000006", "t-0/8")
		return e
	}
	q := &fakeQuarantine{view: kafka.QuarantineView{
		Holds:   map[kafka.TopicKey]kafka.Hold{tk("f"): draining(1, 1)},
		Records: dispositions(t, map[string]kafka.Disposition{"t-0/7": copyOf(1, 1)}),
	}}
	r := runQuarantine(t, q, ev(), nil, func(c *kafka.Config) { c.PartitionCount = n })
	require.Empty(t, r.resp.BatchItemFailures)
	require.ElementsMatch(t, []string{"t-0/4", "t-0/5", "t-0/7", "t-0/8"}, r.started)
	require.Equal(t, []string{"park t-0/1 t-0/2 hold"}, q.Of("a"))
	require.Equal(t, []string{"park t-0/3 hold"}, q.Of("b"))
	require.Equal(t, []string{"park t-0/6 hold"}, q.Of("e"))
	require.ErrorIs(t, q.Nth(t, "a", 0).Cause, kafka.ErrPartitionCountChanged)
	require.Contains(t, q.Nth(t, "a", 0).Cause.Error(), "partitioned over 7, the topic has 6")
	require.Contains(t, q.Nth(t, "e", 0).Cause.Error(), `header "x" is not a number`)

	t.Run("no check without a count", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{}
		r := runQuarantine(t, q, ev(), nil)
		require.Len(t, r.started, 8)
	})
	t.Run("without a quarantine", func(t *testing.T) {
		t.Parallel()
		e := withHeader(records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b", "t-0/4"), kafka.PartitionCountHeader, "7", "t-0/1", "t-0/4")
		r := runQuarantine(t, nil, e, nil, func(c *kafka.Config) {
			c.Quarantine, c.QuarantineThreshold, c.PartitionCount = nil, 0, n
		})
		require.Equal(t, []string{"t-0/1", "t-0/2"}, failed(r.resp))
		require.ElementsMatch(t, []string{"t-0/3", "t-0/4"}, r.started, "a null key has no order to lose")
		require.Contains(t, r.lines(t, "t-0/1")[0]["error"], "partitioned over 7, the topic has 6")
	})
}

// New refuses a quarantine Config that cannot work, naming the field, and
// takes each bound at exactly its value.
func TestNewRefusesAnInvalidQuarantineConfig(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{}
	refused := map[string]struct {
		cfg   kafka.Config
		field string
	}{
		"dead letter and quarantine": {kafka.Config{Handler: noop, DeadLetter: &deadLetters{}, Quarantine: q, QuarantineThreshold: 2}, "DeadLetter and Quarantine exclude each other"},
		"no threshold":               {kafka.Config{Handler: noop, Quarantine: q}, "QuarantineThreshold 0: it must be at least 2"},
		"threshold 1":                {kafka.Config{Handler: noop, Quarantine: q, QuarantineThreshold: 1}, "QuarantineThreshold 1: it must be at least 2"},
		"threshold without":          {kafka.Config{Handler: noop, QuarantineThreshold: 3}, "QuarantineThreshold 3 without a Quarantine"},
		"negative partitions":        {kafka.Config{Handler: noop, PartitionCount: -1}, "PartitionCount -1 is negative"},
	}
	for name, tc := range refused {
		_, err := kafka.New(tc.cfg)
		require.ErrorIs(t, err, kafka.ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
	}
	for name, cfg := range map[string]kafka.Config{
		"threshold 2":   {Handler: noop, Quarantine: q, QuarantineThreshold: kafka.MinQuarantineThreshold},
		"one partition": {Handler: noop, PartitionCount: 1},
	} {
		_, err := kafka.New(cfg)
		require.NoError(t, err, name)
	}
}

func TestHoldStateAndOutcomeNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "not_held", kafka.NotHeld.String())
	require.Equal(t, "held", kafka.Held.String())
	require.Equal(t, "draining", kafka.Draining.String())
	require.Equal(t, "unknown", kafka.HoldState(9).String())
	require.Equal(t, "parked", kafka.Parked.String())
	require.Equal(t, "dropped", kafka.Dropped.String())
	require.True(t, kafka.Parked.Completed())
	require.True(t, kafka.Dropped.Completed())
	require.False(t, kafka.Parked.Started())
	require.False(t, kafka.Dropped.Started())
	require.Equal(t, "quarantine", kafka.PanicInQuarantine.String())
	require.True(t, slices.Contains([]string{"skipped_deadline"}, kafka.SkippedDeadline.String()))
}
