package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// TestUpdateKeepsTheLiveShardOfLiveJobsOnly: a write that leaves the job
// live sets its live_shard (so an item from before the index joins it), one
// that ends the job removes it, so the sparse index lists live jobs only.
func TestUpdateKeepsTheLiveShardOfLiveJobsOnly(t *testing.T) {
	t.Parallel()
	cfg := newConfig(nil)
	now := testStart.Add(time.Hour)
	running := &Job{ID: "job-42", Status: StatusRunning, Generation: 1, Version: 1, LeaseOwner: "a",
		LeaseExpiresAt: now.Add(-time.Second)}
	for _, tc := range []struct {
		req  request
		live bool
	}{
		{&NudgeRequest{JobID: "job-42", Generation: 1, Version: 1}, true},
		{&ClaimRequest{JobID: "job-42", AttemptID: "b", LeaseUntil: now.Add(time.Minute)}, true},
		{&RenewRequest{JobID: "job-42", AttemptID: "a", Generation: 1, Version: 1, LeaseUntil: now.Add(time.Minute)}, true},
		{&AcceptRequest{JobID: "job-42", AttemptID: "a", Generation: 1, Version: 1, Result: Result{Key: "k"}}, false},
		{&FailRequest{JobID: "job-42", AttemptID: "a", Generation: 1, Version: 1, Failure: Failure{Code: "x"}}, false},
		{&CancelRequest{JobID: "job-42"}, false},
	} {
		st, err := decide(tc.req, running, now, &cfg)
		require.NoError(t, err, tc.req.describe())
		in := updateInput("jobs", "job-42", &st)
		expr := *in.UpdateExpression
		var name string
		for k, v := range in.ExpressionAttributeNames {
			if v == "live_shard" {
				name = k
			}
		}
		require.NotEmpty(t, name, "%s: %s", tc.req.describe(), expr)
		if !tc.live {
			require.True(t, strings.HasSuffix(expr, " REMOVE "+name), "%s: %s", tc.req.describe(), expr)
			continue
		}
		require.NotContains(t, expr, "REMOVE", tc.req.describe())
		_, rest, ok := strings.Cut(expr, name+" = ")
		require.True(t, ok, "%s: %s", tc.req.describe(), expr)
		value, _, _ := strings.Cut(rest, ",")
		require.Equal(t, &types.AttributeValueMemberS{Value: "5"}, in.ExpressionAttributeValues[value], tc.req.describe())
	}
}
