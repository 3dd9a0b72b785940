package console_test

import (
	"context"
	"fmt"
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

// The oldest command's panel says what is true where the console runs:
// why it has no source (Config.NoOldestCommand), or that CloudWatch has
// no datapoint (not 0s).
func TestTheOldestCommandSaysWhyItIsNotShown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		change func(*console.Config)
		want   string
	}{
		{"Kafka", func(c *console.Config) { c.NoOldestCommand = "no commands queue on Kafka" }, "no commands queue on Kafka"},
		{"no source, no reason", nil, "unavailable: no CloudWatch source configured"},
		{"no datapoint", func(c *console.Config) {
			c.OldestCommand = fakeOldest{err: fmt.Errorf("%w in the last 5 minutes: the queue is empty or its name is wrong", console.ErrNoDatapoint)}
		}, "no datapoint in the last 5 minutes: the queue is empty or its name is wrong"},
	} {
		page := setup(t, c.change).get(t, "/", http.StatusOK)
		require.Equal(t, c.want, testid(t, page, "oldest-command-age"), c.name)
		require.NotContains(t, page, "0s", c.name)
	}
}
