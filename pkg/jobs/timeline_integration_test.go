//go:build integration

package jobs_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// An item written before the history existed, put by hand attribute by
// attribute (no h0 … h19), reads without a history and gets one from its
// next transition: setting a top-level slot never fails on it.
func TestDynamoLegacyItemGetsAHistoryFromItsNextTransition(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	clock := jobstest.NewClock(jobstest.Start)
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: b.client, Table: b.table, Config: jobs.Config{Now: clock.Now}})
	require.NoError(t, err)
	legacy := jobstest.LegacyJob("job-legacy", "t-1", clock.Now())
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	ms := n("1793782800000")
	require.Equal(t, jobstest.Start.UnixMilli(), int64(1793782800000))
	_, err = b.client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: map[string]types.AttributeValue{
		"job_id": s(legacy.ID), "intent_id": s(legacy.IntentID), "tenant": s(legacy.Tenant), "status": s("pending"),
		"generation": n("0"), "version": n("3"), "progress": n("0"),
		"outbox":     &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"id": s(legacy.ID + "/v3"), "type": s("job.run"), "version": n("3")}},
		"created_at": ms, "updated_at": ms, "live_shard": s(jobs.LiveShardOf(legacy.ID, jobs.LiveShards)),
	}})
	require.NoError(t, err)
	got, err := store.Get(t.Context(), legacy.ID)
	require.NoError(t, err)
	require.Equal(t, legacy, got, "the hand-written item is the legacy job")
	jobstest.RequireHistoryFromNextTransition(t, store, clock, legacy)
}

// The same on PostgreSQL: a row whose history is NULL, as the rows
// written before migration 0003 are.
func TestPostgresLegacyRowGetsAHistoryFromItsNextTransition(t *testing.T) {
	t.Parallel()
	db := postgresDB(t)
	clock := jobstest.NewClock(jobstest.Start)
	store := newPostgresStore(t, db, jobs.Config{Now: clock.Now})
	legacy := jobstest.LegacyJob("job-legacy", "t-1", clock.Now())
	_, err := db.ExecContext(t.Context(), `INSERT INTO jobs (job_id, intent_id, tenant, status, generation, version, progress, outbox, created_at, updated_at, history)
		VALUES ($1, $2, $3, 'pending', 0, 3, 0, '{"id": "job-legacy/v3", "type": "job.run", "version": 3}', $4, $4, NULL)`,
		legacy.ID, legacy.IntentID, legacy.Tenant, clock.Now().UnixMilli())
	require.NoError(t, err)
	got, err := store.Get(t.Context(), legacy.ID)
	require.NoError(t, err)
	require.Equal(t, legacy, got, "the hand-written row is the legacy job")
	jobstest.RequireHistoryFromNextTransition(t, store, clock, legacy)
}
