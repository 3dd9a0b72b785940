//go:build integration

package pgsource_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// bundle is what a test of the relay works on: a migrated database of its
// own, the real job store writing the outbox, and a recording sink.
type bundle struct {
	db    *sql.DB
	store *jobs.PostgresStore
	sink  *recorder
}

func setup(t testing.TB) *bundle {
	t.Helper()
	db := pgtest.DB(t)
	db.SetMaxOpenConns(12)
	require.NoError(t, jobs.MigratePostgres(t.Context(), db))
	store, err := jobs.NewPostgresStore(jobs.PostgresConfig{DB: db})
	require.NoError(t, err)
	return &bundle{db: db, store: store, sink: &recorder{}}
}

// setupJobs is setup with jobs "job-000" on (n of them, their ids), each
// made with create's transitions more.
func setupJobs(t testing.TB, n, transitions int) (*bundle, []string) {
	t.Helper()
	b := setup(t)
	ids := jobIDs("job", n)
	for _, id := range ids {
		b.create(t, id, transitions)
	}
	return b, ids
}

// relay is a relay on the bundle's database and sink, cfg's other fields
// kept.
func (b *bundle) relay(t testing.TB, cfg pgsource.Config) *pgsource.Relay {
	t.Helper()
	cfg.DB = b.db
	if cfg.Sink == nil {
		cfg.Sink = b.sink
	}
	r, err := pgsource.New(cfg)
	require.NoError(t, err)
	return r
}

// create makes job id through the store (its version 0, the run command)
// and then n more transitions: a claim (v1, job.started) and renewals
// (job.progress).
func (b *bundle) create(t testing.TB, id string, n int) {
	t.Helper()
	require.NoError(t, b.tryCreate(t.Context(), id, n))
}

// advance runs n more transitions of job id: a claim if it has none yet,
// then renewals.
func (b *bundle) advance(t testing.TB, id string, n int) {
	t.Helper()
	require.NoError(t, b.tryAdvance(t.Context(), id, n))
}

// tryCreate is create for a goroutine of a test: it returns the error.
func (b *bundle) tryCreate(ctx context.Context, id string, n int) error {
	_, err := b.store.Create(ctx, jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: "t-1"})
	if err != nil || n == 0 {
		return err
	}
	return b.tryAdvance(ctx, id, n)
}

// tryAdvance is advance for a goroutine of a test: it returns the error.
func (b *bundle) tryAdvance(ctx context.Context, id string, n int) error {
	j, err := b.store.Get(ctx, id)
	for ; err == nil && n > 0; n-- {
		if j.Generation == 0 {
			j, err = b.store.Claim(ctx, jobs.ClaimRequest{JobID: id, AttemptID: "a-" + id, LeaseUntil: time.Now().Add(time.Minute)})
		} else {
			j, err = b.store.Renew(ctx, jobs.RenewRequest{JobID: id, AttemptID: "a-" + id, Generation: j.Generation,
				Version: j.Version, LeaseUntil: time.Now().Add(time.Minute), Progress: j.Progress + 1})
		}
	}
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	return nil
}

// rows is the number of rows left in the outbox.
func (b *bundle) rows(t testing.TB) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.QueryRow(`SELECT count(*) FROM job_outbox`).Scan(&n))
	return n
}

// want is the messages of jobs with versions 0..last each (no nudges): the
// command of v0, then one event per version.
func want(ids []string, last int) map[string][]string {
	w := map[string][]string{}
	for _, id := range ids {
		for v := range last + 1 {
			w[id] = append(w[id], jobs.OutboxID(id, int64(v)))
		}
	}
	return w
}

func jobIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return ids
}

// recorder is an outbox.Sink that records what it acknowledged, in order,
// and checks the relay's contract: one message per job per round.
type recorder struct {
	mu     sync.Mutex
	acked  []outbox.Message
	rounds int
	// refuse, when set, says why a message is refused (nil: acknowledged).
	refuse func(m outbox.Message) error
	// after, when set, runs after each round, with its context.
	after func(ctx context.Context, msgs []outbox.Message)
	// problems are breaches of the contract the sink saw.
	problems []string
}

func (s *recorder) Send(ctx context.Context, msgs []outbox.Message, _ string) []error {
	errs := make([]error, len(msgs))
	if err := ctx.Err(); err != nil { // as a transport's call would fail
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	s.mu.Lock()
	s.rounds++
	seen := map[string]bool{}
	for i, m := range msgs {
		if seen[m.JobID] {
			s.problems = append(s.problems, "two messages of "+m.JobID+" in one round")
		}
		seen[m.JobID] = true
		if s.refuse != nil {
			errs[i] = s.refuse(m)
		}
		if errs[i] == nil {
			s.acked = append(s.acked, m)
		}
	}
	after := s.after
	s.mu.Unlock()
	if after != nil {
		after(ctx, msgs)
	}
	return errs
}

// byJob is the outbox ids the sink acknowledged, per job, in order.
func (s *recorder) byJob() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for _, m := range s.acked {
		out[m.JobID] = append(out[m.JobID], m.OutboxID)
	}
	return out
}

// requireExactly holds the sink to have published each job's messages of
// w exactly once, in order, and nothing else.
func requireExactly(t testing.TB, s *recorder, w map[string][]string) {
	t.Helper()
	require.Empty(t, s.problems)
	require.Equal(t, w, s.byJob())
}

// requireInOrder holds the sink to have published each job's messages of w
// in order, every one at least once and nothing else, where a message
// already published may come again (after a crash) only as a run that
// restarts at or before it and goes on in order: never a later message
// before an earlier one was published.
func requireInOrder(t testing.TB, s *recorder, w map[string][]string) {
	t.Helper()
	require.Empty(t, s.problems)
	got := s.byJob()
	require.ElementsMatch(t, keys(w), keys(got), "jobs published")
	for id, seq := range got {
		last, highest := -1, -1
		for k, oid := range seq {
			i := slices.Index(w[id], oid)
			require.GreaterOrEqual(t, i, 0, "%s: %s is not one of its messages", id, oid)
			if i > highest+1 {
				t.Fatalf("%s: %s published before %s (at %d of %s)", id, oid, w[id][highest+1], k, strings.Join(seq, " "))
			}
			require.True(t, i == last+1 || i <= last, "%s: %s out of order (at %d of %s)", id, oid, k, strings.Join(seq, " "))
			last, highest = i, max(highest, i)
		}
		require.Equal(t, len(w[id])-1, highest, "%s: not every message published: %s", id, strings.Join(seq, " "))
	}
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// awaitLocksReleased waits until no session of the database holds an
// advisory lock: a Drain whose context was cancelled has its transaction
// rolled back by database/sql asynchronously, on a connection it discards,
// and the server releases that session's locks only when it has ended it.
// Until then a relay skips the crashed relay's jobs as held, as it should.
func (b *bundle) awaitLocksReleased(t testing.TB) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.db.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
			WHERE l.locktype = 'advisory' AND d.datname = current_database()`).Scan(&n))
		return n == 0
	}, 30*time.Second, 5*time.Millisecond, "the crashed relay's locks are still held")
}
