//go:build integration

package jobs_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// BenchmarkPostgresStoreJob is one job's life on the store, one client:
// create, claim, renew, accept. It reports the statements (round trips)
// a job costs beside the time.
func BenchmarkPostgresStoreJob(b *testing.B) {
	pb := setupPostgres(b)
	ctx := b.Context()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("job-%d", i)
		_, err := pb.store.Create(ctx, jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: "t-1"})
		require.NoError(b, err)
		j, err := pb.store.Claim(ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-a", LeaseUntil: pb.clock.Now().Add(time.Minute)})
		require.NoError(b, err)
		j, err = pb.store.Renew(ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
			LeaseUntil: pb.clock.Now().Add(time.Minute), Progress: 1})
		require.NoError(b, err)
		_, err = pb.store.Accept(ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
			Result: jobs.Result{Key: "candidates/" + id + "/g0000000001/attempt-a.json", SHA256: strings.Repeat("ab", 32), Size: 7}, Progress: 2})
		require.NoError(b, err)
	}
	b.ReportMetric(float64(pb.count.take())/float64(b.N), "statements/job")
}
