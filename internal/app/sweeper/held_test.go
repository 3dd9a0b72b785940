package sweeper_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

const (
	commandsQueue = "stack-commands.fifo"
	eventsQueue   = "stack-events.fifo"
)

// countingHolds is the quarantine's memory store, counting the reads the
// sweeper makes and able to fail them.
type countingHolds struct {
	*quarantine.MemoryStore
	mu        sync.Mutex
	reads     [][]string // the groups of each Read
	holds     map[string]int
	failHolds map[string]error // queue → the error of its Holds
	failRead  error
}

func newCountingHolds() *countingHolds {
	return &countingHolds{MemoryStore: quarantine.NewMemoryStore(), holds: map[string]int{}, failHolds: map[string]error{}}
}

func (c *countingHolds) Read(ctx context.Context, queue string, groups []string, keys []quarantine.ItemKey) (map[string]quarantine.HoldRecord, map[quarantine.ItemKey]quarantine.Parked, error) {
	c.mu.Lock()
	c.reads = append(c.reads, append([]string(nil), groups...))
	err := c.failRead
	c.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	return c.MemoryStore.Read(ctx, queue, groups, keys)
}

func (c *countingHolds) Holds(ctx context.Context, queue string) ([]quarantine.HoldRecord, error) {
	c.mu.Lock()
	c.holds[queue]++
	err := c.failHolds[queue]
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return c.MemoryStore.Holds(ctx, queue)
}

// park holds group on queue with one parked message, as the worker's
// quarantine does when a command fails for good.
func park(t *testing.T, q *countingHolds, queue, group, seq string, now time.Time) {
	t.Helper()
	key, err := quarantine.SeqKey(seq)
	require.NoError(t, err)
	_, err = q.Park(t.Context(), queue, group, []quarantine.Parked{{
		Sequence: key, MessageID: "m-" + seq, Body: "{}", BodyMD5: "99914b932bd37a50b983c5e7c90ae93b", BodySize: 2,
	}}, true, "boom", now)
	require.NoError(t, err)
}

func setupHeld(t *testing.T, adjust ...func(*sweeper.Config)) (*testBundle, *countingHolds) {
	t.Helper()
	q := newCountingHolds()
	b := setup(t, append([]func(*sweeper.Config){func(c *sweeper.Config) {
		c.Quarantine, c.CommandsQueue, c.EventsQueue = q, commandsQueue, eventsQueue
	}}, adjust...)...)
	return b, q
}

// A stuck job whose commands group is held is not nudged: its nudge's
// command would only be parked behind the held one, one more each
// StuckAfter, each with a job.requeued event. It is counted as held. The
// holds of one listing's jobs are read in one request, not one per job;
// unheld stuck jobs are nudged as before, and once the hold is released
// the job is nudged again.
func TestAHeldJobIsNotNudgedAndIsReportedHeld(t *testing.T) {
	t.Parallel()
	b, q := setupHeld(t)
	held := b.create(t, "job-held")
	free := b.create(t, "job-free")
	b.create(t, "job-expired")
	expired := b.claim(t, "job-expired", "attempt-e", time.Minute)
	drained := b.create(t, "job-draining")
	park(t, q, commandsQueue, "job-held", "1001", b.clock.Now())
	park(t, q, commandsQueue, "job-draining", "1002", b.clock.Now())
	_, err := q.BeginRedrive(b.ctx, commandsQueue, "job-draining", b.clock.Now())
	require.NoError(t, err)
	park(t, q, eventsQueue, "job-free", "1003", b.clock.Now()) // the events queue's hold is not the commands'

	b.clock.Advance(time.Hour)
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 4, r.Stuck)
	require.Equal(t, 2, r.Nudged, "job-free and job-expired")
	require.Equal(t, 2, r.Held, "job-held, and job-draining while its redrive runs")
	require.Zero(t, r.Errors)
	require.Equal(t, held.Version, b.get(t, "job-held").Version, "not nudged")
	require.Equal(t, drained.Version, b.get(t, "job-draining").Version, "not nudged")
	require.Equal(t, free.Version+1, b.get(t, "job-free").Version, "nudged")
	require.Equal(t, expired.Version+1, b.get(t, "job-expired").Version, "nudged")
	require.Len(t, q.reads, 1, "one read of the holds for the listing")
	require.ElementsMatch(t, []string{"job-held", "job-free", "job-expired", "job-draining"}, q.reads[0])
	require.Contains(t, b.logs.String(), `"msg":"sweep: not nudged: its commands group is held","job_id":"job-held"`)

	// A dry run says the same without writing.
	b.clock.Advance(time.Hour)
	dry := b.run(t, sweeper.Options{DryRun: true})
	require.Equal(t, 2, dry.Held)
	require.Equal(t, 2, dry.WouldNudge)

	// Released: nudged again.
	_, err = q.Discard(b.ctx, commandsQueue, "job-held", mustSeqKey(t, "1001"), b.clock.Now())
	require.NoError(t, err)
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Held, "job-draining still")
	require.Equal(t, 3, r.Nudged)
	require.Equal(t, held.Version+1, b.get(t, "job-held").Version, "nudged at last")
	require.Equal(t, jobs.MessageRun, b.get(t, "job-held").Outbox.Type)
}

// When the holds cannot be read, no stuck job is nudged (a held one would
// be): the run counts the error and the next run tries again.
func TestNoNudgeWhenTheHoldsCannotBeRead(t *testing.T) {
	t.Parallel()
	b, q := setupHeld(t)
	b.create(t, "job-42")
	b.clock.Advance(time.Hour)
	q.failRead = context.DeadlineExceeded
	r, err := b.sweeper.Run(b.ctx, sweeper.Options{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 1, r.Errors)
	require.Zero(t, r.Nudged+r.Held)
	require.Zero(t, b.get(t, "job-42").Version, "not nudged")
	q.failRead = nil
	require.Equal(t, 1, b.run(t, sweeper.Options{}).Nudged)
}

func mustSeqKey(t *testing.T, seq string) string {
	t.Helper()
	k, err := quarantine.SeqKey(seq)
	require.NoError(t, err)
	return k
}
