package jobs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

var testStart = time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)

// genJob draws an item in any state the machine can reach, or nil.
func genJob(t *rapid.T, now time.Time) *Job {
	if rapid.IntRange(0, 9).Draw(t, "missing") == 0 {
		return nil
	}
	j := Job{ID: "job-42", IntentID: "export-intent-7", Tenant: "t-1", CreatedAt: testStart, UpdatedAt: testStart}
	j.Status = rapid.SampledFrom([]Status{StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled}).Draw(t, "status")
	if j.Status == StatusPending {
		return &j
	}
	j.Generation = rapid.Int64Range(1, 5).Draw(t, "generation")
	j.Version = j.Generation + rapid.Int64Range(0, 4).Draw(t, "renewals")
	j.LeaseOwner = rapid.SampledFrom([]string{"a1", "a2", "a3"}).Draw(t, "owner")
	j.LeaseExpiresAt = ms(now.Add(time.Duration(rapid.IntRange(-3, 3).Draw(t, "lease")) * time.Millisecond))
	return &j
}

// genRequest draws a request that is often, but not always, right about cur.
func genRequest(t *rapid.T, cur *Job, now time.Time) request {
	g, v, owner := int64(1), int64(1), "a1"
	if cur != nil {
		g, v, owner = max(1, cur.Generation), max(1, cur.Version), cur.LeaseOwner
	}
	g = max(1, g+rapid.Int64Range(-1, 1).Draw(t, "dg")*rapid.Int64Range(0, 1).Draw(t, "wrong g"))
	v = max(1, v+rapid.Int64Range(-1, 1).Draw(t, "dv")*rapid.Int64Range(0, 1).Draw(t, "wrong v"))
	attempt := rapid.SampledFrom([]string{owner, "a1", "a2", "a3"}).Draw(t, "attempt")
	if attempt == "" {
		attempt = "a1"
	}
	until := now.Add(time.Minute)
	switch rapid.IntRange(0, 5).Draw(t, "op") {
	case 0:
		return &ClaimRequest{JobID: "job-42", AttemptID: attempt, LeaseUntil: until}
	case 1:
		return &RenewRequest{JobID: "job-42", AttemptID: attempt, Generation: g, Version: v, LeaseUntil: until, Progress: 7}
	case 2:
		return &AcceptRequest{JobID: "job-42", AttemptID: attempt, Generation: g, Version: v,
			Result: Result{Key: "k/" + attempt, SHA256: "00"}, Progress: 9}
	case 3:
		return &FailRequest{JobID: "job-42", AttemptID: attempt, Generation: g, Version: v, Failure: Failure{Code: "x"}}
	case 4:
		return &CancelRequest{JobID: "job-42", Reason: "r"}
	default:
		// A nudge reads the job first, so it is often right about both.
		g, v := int64(0), int64(0)
		if cur != nil {
			g, v = cur.Generation, cur.Version
		}
		g = max(0, g+rapid.Int64Range(-1, 1).Draw(t, "dg")*rapid.Int64Range(0, 1).Draw(t, "wrong g"))
		v = max(g, v+rapid.Int64Range(-1, 1).Draw(t, "dv")*rapid.Int64Range(0, 1).Draw(t, "wrong v"))
		return &NudgeRequest{JobID: "job-42", Generation: g, Version: v,
			Reason: rapid.SampledFrom([]string{"", "stuck"}).Draw(t, "reason")}
	}
}

// TestDecideProperties checks the state machine on random states and
// requests: a planned write's guard holds on the item it was planned from,
// it moves the version by one and never the generation back, its outbox is
// the new version's, the same request retried after the write landed is
// recognised and gets the same answer, and a claim is never answered with a
// lease that is already over.
func TestDecideProperties(t *testing.T) {
	t.Parallel()
	cfg := resolved(t, Config{Recovery: RecoveryPolicy{MaxGenerations: 3}})
	rapid.Check(t, func(t *rapid.T) {
		now := testStart.Add(time.Hour)
		cur := genJob(t, now)
		req := genRequest(t, cur, now)
		st, err := decide(req, cur, now, &cfg)
		if err != nil {
			var categories int
			for _, c := range []error{ErrNotFound, ErrStaleGeneration, ErrLeaseHeld, ErrFinal} {
				if errors.Is(err, c) {
					categories++
				}
			}
			require.Equal(t, 1, categories, "%v matches exactly one category", err)
			return
		}
		if st.done {
			require.NotNil(t, cur)
			if _, ok := req.(*ClaimRequest); ok && st.after == nil {
				require.GreaterOrEqual(t, cur.LeaseExpiresAt.UnixMilli(), now.UnixMilli(),
					"a recognised claim is answered with a live lease")
			}
			return
		}
		require.True(t, st.guard.holds(cur), "guard %+v on %+v", st.guard, cur)
		next := st.patch.apply(*cur)
		require.Equal(t, cur.Version+1, next.Version)
		require.GreaterOrEqual(t, next.Generation, cur.Generation)
		require.Equal(t, Message{ID: OutboxID(cur.ID, next.Version), Type: next.Outbox.Type, Version: next.Version,
			Payload: next.Outbox.Payload}, next.Outbox)
		require.False(t, st.guard.holds(&next), "a write's guard never holds after it: a retry cannot apply twice")
		switch req.(type) {
		case *RenewRequest, *AcceptRequest, *FailRequest:
			require.Equal(t, cur.Generation, next.Generation, "a fenced write keeps the generation")
		case *NudgeRequest:
			require.Equal(t, cur.Generation, next.Generation, "a nudge keeps the generation")
			require.Equal(t, cur.Status, next.Status, "a nudge keeps the status")
			require.Contains(t, []Status{StatusPending, StatusRunning}, cur.Status)
			require.Equal(t, MessageRun, next.Outbox.Type, "a nudge writes a run command")
			if cur.Status == StatusRunning {
				require.Less(t, cur.LeaseExpiresAt.UnixMilli(), now.UnixMilli(), "a nudge never passes a live lease")
			}
			require.Equal(t, cur.LeaseOwner, next.LeaseOwner)
			require.Equal(t, cur.LeaseExpiresAt, next.LeaseExpiresAt)
			require.Equal(t, cur.Progress, next.Progress)
		default:
			require.Equal(t, cur.Generation+1, next.Generation)
		}

		retry, err := decide(req, &next, now, &cfg)
		require.NoError(t, err, "retry of %s after it landed", req.describe())
		require.True(t, retry.done, "retry of %s after it landed is recognised", req.describe())
		require.Equal(t, st.after, retry.after, "retry of %s after it landed gets the same answer", req.describe())
		if c, ok := req.(*ClaimRequest); ok && st.after == nil {
			require.GreaterOrEqual(t, next.LeaseExpiresAt.UnixMilli(), now.UnixMilli(),
				"a claim never grants a lease that is already over")
			// The same attempt asking again once that lease is over is a
			// takeover, never told that it still holds the lease.
			later := ms(next.LeaseExpiresAt.Add(time.Millisecond))
			again := *c
			again.LeaseUntil = later.Add(time.Minute)
			st, err := decide(&again, &next, later, &cfg)
			require.NoError(t, err)
			require.False(t, st.done, "own claim after its lease ended")
			require.Equal(t, next.Generation+1, st.patch.apply(next).Generation)
		}
	})
}

// TestExpectationIsAWrite: the first write a DynamoDB store makes without
// reading is planned from req.expect(), which must plan a write.
func TestExpectationIsAWrite(t *testing.T) {
	t.Parallel()
	cfg := resolved(t, Config{})
	now := testStart
	for _, req := range []request{
		&ClaimRequest{JobID: "job-42", AttemptID: "a", LeaseUntil: now.Add(time.Minute)},
		&ClaimRequest{JobID: "job-42", AttemptID: "a", LeaseUntil: now.Add(time.Minute), Tenant: "t-1"},
		&RenewRequest{JobID: "job-42", AttemptID: "a", Generation: 2, Version: 3, LeaseUntil: now.Add(time.Minute)},
		&AcceptRequest{JobID: "job-42", AttemptID: "a", Generation: 2, Version: 3, Result: Result{Key: "k"}},
		&FailRequest{JobID: "job-42", AttemptID: "a", Generation: 2, Version: 3, Failure: Failure{Code: "x"}},
		&CancelRequest{JobID: "job-42"},
		&NudgeRequest{JobID: "job-42"},
		&NudgeRequest{JobID: "job-42", Generation: 2, Version: 3, Reason: "stuck"},
	} {
		st, err := decide(req, req.expect(), now, &cfg)
		require.NoError(t, err, req.describe())
		require.False(t, st.done, req.describe())
		require.True(t, st.guard.holds(req.expect()), req.describe())
	}
}

func TestErrorsNameTheOperation(t *testing.T) {
	t.Parallel()
	err := transitionError(&AcceptRequest{JobID: "job-42", Generation: 1}, &StaleError{Generation: 2, Version: 3, Status: StatusCompleted})
	require.EqualError(t, err, "jobs: accept job-42 g1: stale generation: job is at g2 v3 (completed)")
	require.ErrorIs(t, err, ErrStaleGeneration)
	require.False(t, errors.Is(err, ErrFinal))

	until := time.Date(2026, 11, 4, 9, 1, 0, 0, time.UTC)
	err = transitionError(&ClaimRequest{JobID: "job-42", AttemptID: "b"}, &LeaseHeldError{Owner: "a", Generation: 1, Until: until})
	require.EqualError(t, err, "jobs: claim job-42 as b: lease held by a (g1) until 2026-11-04T09:01:00Z")
	require.ErrorIs(t, err, ErrLeaseHeld)

	err = fmt.Errorf("wrapped: %w", &FinalError{Status: StatusFailed, Failure: Failure{Code: CodeRecoveryExhausted}})
	require.ErrorIs(t, err, ErrFinal)
	require.EqualError(t, err, "wrapped: job is final: failed (recovery_exhausted)")
}

func TestValidateID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"job-42", "J_1", "a", "0"} {
		require.NoError(t, ValidateID(id), id)
	}
	for _, id := range []string{"", "job 42", "job#42", "job/42", "jöb", strings.Repeat("j", 129)} {
		err := ValidateID(id)
		require.ErrorIs(t, err, ErrInvalid, id)
		require.Contains(t, err.Error(), "[A-Za-z0-9_-]{1,128}")
	}
	// Intent markers can never collide with job ids.
	require.Error(t, ValidateID(IntentKey("t-1", "export-intent-7")))
	require.NoError(t, ValidateID(DeriveJobID("t-1", "export-intent-7")))
	require.NotEqual(t, DeriveJobID("t-1", "x"), DeriveJobID("t-2", "x"))
}

func TestSpecHashIgnoresOrderAndEmptiness(t *testing.T) {
	t.Parallel()
	require.Equal(t, specHash(nil), specHash(map[string]string{}))
	require.Equal(t, specHash(map[string]string{"a": "1", "b": "2"}), specHash(map[string]string{"b": "2", "a": "1"}))
	// Length prefixes: shifting characters between key and value changes the hash.
	require.NotEqual(t, specHash(map[string]string{"ab": "c"}), specHash(map[string]string{"a": "bc"}))
}

// TestNudgeIsNotTakenForARenewal: a nudge leaves a running job at the
// holder's generation, lease and progress with the version one up, which is
// also what the holder's renewal would leave if it asked for the same lease
// end. A renewal sent before the lease ended and decided after the nudge
// must be refused, not recognised as its own success.
func TestNudgeIsNotTakenForARenewal(t *testing.T) {
	t.Parallel()
	cfg := resolved(t, Config{})
	lease := ms(testStart.Add(time.Minute))
	cur := &Job{ID: "job-42", Status: StatusRunning, Generation: 1, Version: 2, LeaseOwner: "a", LeaseExpiresAt: lease, Progress: 30,
		Outbox: Message{ID: "job-42/v2", Type: EventProgress, Version: 2, Payload: map[string]string{PayloadAttemptID: "a"}}}
	nudge := &NudgeRequest{JobID: "job-42", Generation: 1, Version: 2}
	st, err := decide(nudge, cur, lease.Add(time.Millisecond), &cfg)
	require.NoError(t, err)
	nudged := st.patch.apply(*cur)

	renew := &RenewRequest{JobID: "job-42", AttemptID: "a", Generation: 1, Version: 2, LeaseUntil: lease, Progress: 30}
	_, err = decide(renew, &nudged, testStart, &cfg)
	require.ErrorIs(t, err, ErrStaleGeneration)
	// While the renewal's own write is recognised.
	st, err = decide(renew, cur, testStart, &cfg)
	require.NoError(t, err)
	renewed := st.patch.apply(*cur)
	require.Equal(t, nudged.Version, renewed.Version)
	st, err = decide(renew, &renewed, testStart, &cfg)
	require.NoError(t, err)
	require.True(t, st.done)
}
