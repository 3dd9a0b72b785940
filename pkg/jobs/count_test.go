package jobs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// liveStore is a memory store with three pending jobs, three running and
// one cancelled, each a minute after the one before, and its clock.
func liveStore(t *testing.T) (*jobs.MemoryStore, *jobstest.Clock) {
	t.Helper()
	clock := jobstest.NewClock(jobstest.Start)
	store, err := jobs.NewMemoryStore(jobs.Config{Now: clock.Now})
	require.NoError(t, err)
	for i := range 7 {
		clock.Advance(time.Minute)
		id := fmt.Sprintf("job-%d", i)
		_, err := store.Create(t.Context(), jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: fmt.Sprintf("t-%d", i%2)})
		require.NoError(t, err)
		switch {
		case i%2 == 1:
			_, err = store.Claim(t.Context(), jobs.ClaimRequest{JobID: id, AttemptID: "attempt-" + id, LeaseUntil: clock.Now().Add(10 * time.Minute)})
		case i == 6:
			_, err = store.Cancel(t.Context(), jobs.CancelRequest{JobID: id})
		}
		require.NoError(t, err)
	}
	return store, clock
}

// TestCountLiveCountsWhatTheLivePageShows: CountLive's numbers are those
// of the jobs List's first live page shows, by status, and its More is the
// page's: at a limit below the live jobs, at exactly their number (no
// more), and above it; a final job is not counted.
func TestCountLiveCountsWhatTheLivePageShows(t *testing.T) {
	t.Parallel()
	store, clock := liveStore(t)
	for _, c := range []struct {
		limit, total     int
		pending, running int
		more             bool
	}{
		{limit: 5, total: 5, pending: 3, running: 2, more: true},
		{limit: 6, total: 6, pending: 3, running: 3},
		{limit: 7, total: 6, pending: 3, running: 3},
	} {
		got, err := jobs.CountLive(t.Context(), store, c.limit, clock.Now())
		require.NoError(t, err)
		require.Equal(t, jobs.LiveCount{Total: c.total, More: c.more,
			ByStatus: map[jobs.Status]int{jobs.StatusPending: c.pending, jobs.StatusRunning: c.running}}, got, "limit %d", c.limit)
		page, err := jobs.List(t.Context(), store, jobs.ListOptions{LiveOnly: true, Limit: c.limit}, clock.Now())
		require.NoError(t, err)
		require.Len(t, page.Jobs, got.Total, "limit %d: the page's jobs", c.limit)
		require.Equal(t, page.More, got.More, "limit %d: the page's More", c.limit)
	}
	_, err := jobs.CountLive(t.Context(), store, jobs.MaxListLimit+1, clock.Now())
	require.ErrorIs(t, err, jobs.ErrInvalid, "List's bounds")
}

// statusOnly is a store that reads statuses through GetStatuses and whose
// GetMany must not be called.
type statusOnly struct {
	*jobs.MemoryStore
	t     *testing.T
	asked int
}

func (s *statusOnly) GetMany(context.Context, []string) (map[string]jobs.Job, error) {
	s.t.Errorf("GetMany called on a StatusReader")
	return nil, nil
}

func (s *statusOnly) GetStatuses(ctx context.Context, ids []string) (map[string]jobs.Status, error) {
	s.asked += len(ids)
	got, err := s.MemoryStore.GetMany(ctx, ids)
	out := map[string]jobs.Status{}
	for id, j := range got {
		out[id] = j.Status
	}
	return out, err
}

// TestCountLiveReadsStatusesWhereTheStoreCan: a store that is a
// jobs.StatusReader is counted through GetStatuses, never GetMany, with
// the same numbers.
func TestCountLiveReadsStatusesWhereTheStoreCan(t *testing.T) {
	t.Parallel()
	store, clock := liveStore(t)
	want, err := jobs.CountLive(t.Context(), store, 5, clock.Now())
	require.NoError(t, err)
	st := &statusOnly{MemoryStore: store, t: t}
	got, err := jobs.CountLive(t.Context(), st, 5, clock.Now())
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, 6, st.asked, "the page's five and one more, to know there are more")
}

// TestDynamoGetStatusesProjectsTheStatus: GetStatuses is GetMany's strongly
// consistent BatchGetItems (unprocessed keys asked again) projected on
// the id and the status (a reserved word, so by name); an item whose
// status does not decode is named by an *UndecodableError returned with
// the others.
func TestDynamoGetStatusesProjectsTheStatus(t *testing.T) {
	t.Parallel()
	var asked int
	api := &fakeDynamo{t: t, batchGet: func(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
		ka := in.RequestItems["jobs"]
		require.True(t, aws.ToBool(ka.ConsistentRead))
		require.Equal(t, "#id, #st", aws.ToString(ka.ProjectionExpression))
		require.Equal(t, map[string]string{"#id": "job_id", "#st": "status"}, ka.ExpressionAttributeNames)
		asked++
		out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
		keys := ka.Keys
		if asked == 1 {
			out.UnprocessedKeys = map[string]types.KeysAndAttributes{"jobs": {Keys: keys[100-10:]}}
			keys = keys[:100-10]
		}
		for _, k := range keys {
			id := k["job_id"].(*types.AttributeValueMemberS).Value
			var st types.AttributeValue = &types.AttributeValueMemberS{Value: "running"}
			if id == "job-7" {
				st = &types.AttributeValueMemberN{Value: "7"}
			}
			out.Responses["jobs"] = append(out.Responses["jobs"], map[string]types.AttributeValue{"job_id": k["job_id"], "status": st})
		}
		return out, nil
	}}
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs"})
	require.NoError(t, err)
	got, err := store.GetStatuses(t.Context(), jobIDs(100))
	var undecodable *jobs.UndecodableError
	require.ErrorAs(t, err, &undecodable)
	require.Contains(t, undecodable.Items, "job-7")
	require.Len(t, got, 99, "every job but the one that does not decode")
	require.Equal(t, jobs.StatusRunning, got["job-99"], "an unprocessed key, asked again")
	require.Equal(t, 2, asked)
}
