package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// TestUpdateKeepsTheLiveShardOfLiveJobsOnly: a write that leaves the job
// live keeps its live_shard, or sets it when the item has none (so an item
// from before the index joins it), one
// that ends the job removes it, so the sparse index lists live jobs only;
// the write that ends the job sets the finished index's keys instead.
func TestUpdateKeepsTheLiveShardOfLiveJobsOnly(t *testing.T) {
	t.Parallel()
	cfg := resolved(t, Config{})
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
		in := updateInput("jobs", "job-42", LiveShards, &st)
		expr := *in.UpdateExpression
		var name string
		for k, v := range in.ExpressionAttributeNames {
			if v == "live_shard" {
				name = k
			}
		}
		require.NotEmpty(t, name, "%s: %s", tc.req.describe(), expr)
		value := func(attr string) types.AttributeValue {
			for k, v := range in.ExpressionAttributeNames {
				if v == attr {
					_, rest, ok := strings.Cut(expr, k+" = ")
					require.True(t, ok, "%s: %s", tc.req.describe(), expr)
					placeholder, _, _ := strings.Cut(rest, ",")
					placeholder, _, _ = strings.Cut(placeholder, " ")
					return in.ExpressionAttributeValues[placeholder]
				}
			}
			return nil
		}
		if !tc.live {
			require.True(t, strings.HasSuffix(expr, " REMOVE "+name), "%s: %s", tc.req.describe(), expr)
			// Into the finished index, keyed by this transition's time.
			require.Equal(t, &types.AttributeValueMemberS{Value: "5"}, value("finished_shard"), tc.req.describe())
			require.Equal(t, &types.AttributeValueMemberS{Value: FinishedKey("job-42", now)}, value("finished_key"), tc.req.describe())
			continue
		}
		require.Nil(t, value("finished_shard"), tc.req.describe())
		require.Nil(t, value("finished_key"), tc.req.describe())
		require.NotContains(t, expr, "REMOVE", tc.req.describe())
		// The shard the job was created in stays (a store of another
		// count writes no other); an item without one gets the writer's.
		_, rest, ok := strings.Cut(expr, name+" = if_not_exists("+name+", ")
		require.True(t, ok, "%s keeps the job's shard: %s", tc.req.describe(), expr)
		placeholder, _, _ := strings.Cut(rest, ")")
		require.Equal(t, &types.AttributeValueMemberS{Value: "5"}, in.ExpressionAttributeValues[placeholder], tc.req.describe())
	}
}
