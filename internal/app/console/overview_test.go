package console_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
)

// hanging sources answer only when their context ends.
type hangingDepth struct{}

func (hangingDepth) Depth(ctx context.Context) (int64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

type hangingOldest struct{}

func (hangingOldest) OldestCommandAge(ctx context.Context) (time.Duration, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

type hangingSweeps struct{}

func (hangingSweeps) LastRun(ctx context.Context) (sweeper.LastRun, error) {
	<-ctx.Done()
	return sweeper.LastRun{}, ctx.Err()
}

// Sources that do not answer hold the overview up for SourceTimeout, not
// one after another: they are read together, each shows its own error in
// its panel, and the others are shown.
func TestASlowSourceDoesNotHoldUpTheOverview(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, func(c *console.Config) {
			c.Queues[0].DeadLetters = hangingDepth{}
			c.OldestCommand = hangingOldest{}
			c.Sweeps = hangingSweeps{}
		})
		b.create(t, "job-1", "acme")
		start := time.Now()
		page := b.get(t, "/", http.StatusOK)
		require.Equal(t, console.DefaultSourceTimeout, time.Since(start), "the sources are read together, each for at most the timeout")
		require.Equal(t, "1", testid(t, page, "live-total"), "the live jobs are shown")
		require.Equal(t, "unreadable: no answer within 2s (context deadline exceeded)", testid(t, page, "dlq-commands"))
		require.Contains(t, page, "unreadable: no answer within 2s (context deadline exceeded)</p>")
		require.Contains(t, page, `class="error" data-testid="sweep-last-run">no answer within 2s (context deadline exceeded)`)
	})
}

// SourceTimeout is the Config's: a source that answers just within it is
// shown.
func TestTheOverviewsSourceTimeoutIsTheConfigs(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, func(c *console.Config) {
			c.SourceTimeout = 5 * time.Second
			c.Queues[0].DeadLetters = hangingDepth{}
		})
		start := time.Now()
		page := b.get(t, "/", http.StatusOK)
		require.Equal(t, 5*time.Second, time.Since(start))
		require.Equal(t, "unreadable: no answer within 5s (context deadline exceeded)", testid(t, page, "dlq-commands"))
	})
}
