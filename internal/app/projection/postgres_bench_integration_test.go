//go:build integration

package projection_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
)

// BenchmarkPostgresApply applies job histories one event after another on
// one connection: one statement per event, the cost of a projector's lane.
// Each op is one event; the tenant's totals row is shared, as a tenant's
// jobs share it.
func BenchmarkPostgresApply(b *testing.B) {
	db := setupPostgres(b)
	db.SetMaxOpenConns(1)
	store, err := projection.NewPostgresStore(projection.PostgresConfig{DB: db})
	require.NoError(b, err)
	ctx := b.Context()
	job := 0
	var evs []outbox.Event
	for b.Loop() {
		if len(evs) == 0 {
			job++
			evs = projectiontest.Lifecycle("job-"+strconv.Itoa(job), "t-bench")
		}
		res, err := store.Apply(ctx, projection.ViewOfEvent(&evs[0]), evs[0].Delta)
		if err != nil || res.Outcome != projection.Applied {
			b.Fatalf("apply %s: %v %v", evs[0].EventID, res.Outcome, err)
		}
		evs = evs[1:]
	}
}
