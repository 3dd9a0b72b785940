//go:build integration

package projection_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// TestDynamoRecoverRacingARecoveryOfAForgedStatus recovers a job whose
// cursor a forged completion moved (version 3, progress 30, completed;
// the item is running at that version and progress) while a second
// recovery to the same item comes between the first one's read of the
// cursor and its transaction. The second takes the completion back; the
// cursor then differs from what the first read in its status alone, so
// the first's transaction, conditioned on the status too, is refused, and
// its second round finds nothing to do. Without the status in the
// condition it would take the completion back a second time: completed
// -1. (The memory store recovers under one lock: nothing can come
// between.)
func TestDynamoRecoverRacingARecoveryOfAForgedStatus(t *testing.T) {
	t.Parallel()
	b, store, other := setupRace(t)
	ctx := t.Context()
	evs := projectiontest.Lifecycle("job-42", "t-forged-status")
	forged := evs[2]
	forged.Status, forged.Type = jobs.StatusCompleted, jobs.EventCompleted
	for _, e := range []outbox.Event{evs[1], forged} {
		res, err := store.Apply(ctx, projection.ViewOfEvent(&e), e.Delta)
		require.NoError(t, err)
		require.Equal(t, projection.Applied, res.Outcome)
	}
	item := projection.ViewOfEvent(&evs[2])
	wasForged := projection.Cursor{Version: 3, Progress: 30, Status: jobs.StatusCompleted}
	at := projection.Cursor{Version: 3, Progress: 30, Status: jobs.StatusRunning}
	b.interpose.arm(func() {
		r, err := other.Recover(ctx, item)
		require.NoError(t, err)
		require.Equal(t, projection.Recovery{From: wasForged, To: at, Completed: -1, ViewUpdated: true}, r)
	})
	r, err := store.Recover(ctx, item)
	require.NoError(t, err)
	require.Equal(t, projection.Recovery{From: at, To: at}, r, "the other recovery did it all")
	got, err := store.Totals(ctx, "t-forged-status")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-forged-status", Processed: 30}, got, "the completion taken back once")
	c, err := store.Cursor(ctx, "t-forged-status", "job-42")
	require.NoError(t, err)
	require.Equal(t, at, c)
}

// setupRace returns two stores on the same new tables: store, through the
// bundle's client (which counts, can lose responses and interposes), and
// other, through a client of its own that does none of that, to write
// between store's read and its write.
func setupRace(t *testing.T) (b *dynamoBundle, store, other *projection.DynamoStore) {
	t.Helper()
	b = setupDynamo(t)
	other, err := projection.NewDynamoStore(projection.DynamoConfig{Client: dynamodb.NewFromConfig(awstest.Config(t), func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = true
	}), Tables: b.tables})
	require.NoError(t, err)
	store, err = projection.NewDynamoStore(projection.DynamoConfig{Client: b.client, Tables: b.tables})
	require.NoError(t, err)
	return b, store, other
}
