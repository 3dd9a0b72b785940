package jobstest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

func testRenew(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	j := b.claim(t, id, "attempt-a", time.Minute)
	b.clock.Advance(30 * time.Second)
	until := b.clock.Now().Add(time.Minute)
	r, err := b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
		LeaseUntil: until, Progress: 40})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusRunning, r.Status)
	require.Equal(t, int64(1), r.Generation)
	require.Equal(t, int64(2), r.Version)
	require.Equal(t, ms(until), r.LeaseExpiresAt)
	require.Equal(t, int64(40), r.Progress)
	require.Equal(t, ms(b.clock.Now()), r.UpdatedAt)
	require.Equal(t, jobs.Message{ID: id + "/v2", Type: jobs.EventProgress, Version: 2,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-a"}}, r.Outbox)

	// The renewed lease holds off a duplicate past the original lease end.
	b.clock.Advance(45 * time.Second)
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrLeaseHeld)

	// A lease that ends before now is refused before anything is sent.
	_, err = b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 2,
		LeaseUntil: b.clock.Now(), Progress: 41})
	require.ErrorIs(t, err, jobs.ErrInvalid)
	b.requireUnchanged(t, r)
}

func testLeasesAreBounded(t *testing.T, newStore NewStore) {
	for _, tc := range []struct {
		name string
		cfg  jobs.Config
		skew time.Duration
	}{
		{"default skew", jobs.Config{}, jobs.DefaultClockSkew},
		{"one second of skew", jobs.Config{ClockSkew: time.Second}, time.Second},
		{"the largest skew", jobs.Config{ClockSkew: jobs.MaxClockSkew}, jobs.MaxClockSkew},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setupWith(t, newStore, tc.cfg)
			id := b.create(t, "job-42").ID
			before := b.get(t, id)
			// Twice the margin: room for LeaseEnd's margin and as much
			// offset between the deadline's clock and the store's.
			limit := b.clock.Now().Add(jobs.MaxLambdaTimeout + 2*tc.skew)
			for _, until := range []time.Time{
				b.clock.Now().AddDate(1, 0, 0), // a year: no takeover could ever recover the job
				limit.Add(time.Millisecond),    // the first stored instant beyond the bound
			} {
				_, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-a", LeaseUntil: until})
				require.ErrorIs(t, err, jobs.ErrInvalid, "lease until %s", until)
				require.ErrorContains(t, err, "no Lambda invocation runs longer than 15m0s")
				b.requireUnchanged(t, before)
			}
			// The bound itself is granted; it is measured at the stored precision.
			j := b.claim(t, id, "attempt-a", jobs.MaxLambdaTimeout+2*tc.skew+999*time.Microsecond)
			require.Equal(t, ms(limit), j.LeaseExpiresAt)

			// A renewal is bounded alike, from the store's now.
			b.clock.Advance(10 * time.Minute)
			limit = b.clock.Now().Add(jobs.MaxLambdaTimeout + 2*tc.skew)
			renew := jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
				LeaseUntil: limit.Add(time.Millisecond), Progress: 1}
			_, err := b.store.Renew(b.ctx, renew)
			require.ErrorIs(t, err, jobs.ErrInvalid)
			b.requireUnchanged(t, j)
			renew.LeaseUntil = limit
			r, err := b.store.Renew(b.ctx, renew)
			require.NoError(t, err)
			require.Equal(t, ms(limit), r.LeaseExpiresAt)

			// So a stalled holder is always recoverable: once the longest
			// lease has passed, another attempt takes over.
			b.clock.Set(limit.Add(time.Millisecond))
			taken := b.claim(t, id, "attempt-b", time.Minute)
			require.Equal(t, int64(2), taken.Generation)
		})
	}
}
