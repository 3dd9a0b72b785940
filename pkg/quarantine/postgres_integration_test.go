//go:build integration

package quarantine_test

import (
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/pgtest"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
)

// postgresDB is a new database of the test's own with the quarantine's
// schema, on a small pool (the server is shared).
func postgresDB(t *testing.T) *sql.DB {
	t.Helper()
	db := pgtest.DB(t)
	db.SetMaxOpenConns(8)
	require.NoError(t, quarantine.MigratePostgres(t.Context(), db))
	return db
}

func TestPostgresStoreConformance(t *testing.T) {
	t.Parallel()
	db := postgresDB(t) // the suite's tests each use a queue of their own
	quarantinetest.Run(t, func(t *testing.T) quarantine.Store {
		store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
		require.NoError(t, err)
		return store
	})
}

// blockedBy waits until a backend of the server waits for a lock that
// the backend pid holds, and returns what it waits on and its statement.
// It polls pg_stat_activity: the write under test is known to wait when
// the server says so, not after some time.
func blockedBy(t *testing.T, db *sql.DB, pid int) (waitEvent, query string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		err := db.QueryRowContext(t.Context(), `SELECT COALESCE(wait_event_type, ''), query FROM pg_stat_activity
			WHERE $1::int = ANY (pg_blocking_pids(pid))`, pid).Scan(&waitEvent, &query)
		// pg_stat_activity's rows are a snapshot taken before
		// pg_blocking_pids runs: a backend that was still reading when the
		// snapshot was taken shows its read though its write now waits. So
		// the write is waited for by its statement and its wait (a snapshot
		// may show the backend between the two, waiting on nothing).
		if err == nil && waitEvent == "Lock" && strings.Contains(query, "UPDATE quarantine_holds") {
			return waitEvent, query
		}
		if err != nil {
			require.ErrorIs(t, err, sql.ErrNoRows)
		}
		select {
		case <-t.Context().Done():
			t.Fatal("no backend waited for the transaction's lock")
		case <-tick.C:
		}
	}
}

// holdRowLocked begins a transaction that runs stmt, a write of the
// hold's row (it keeps the row locked until the transaction ends), and
// returns it with its backend's pid.
func holdRowLocked(t *testing.T, db *sql.DB, stmt string, args ...any) (*sql.Tx, int) {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	var pid int
	require.NoError(t, tx.QueryRowContext(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid))
	res, err := tx.ExecContext(t.Context(), stmt, args...)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the transaction wrote no hold")
	return tx, pid
}

type result struct {
	h   quarantine.HoldRecord
	err error
}

// TestPostgresAWriteWaitingOnTheHoldsRowChecksItAgain: a Done computed
// from a draining hold whose oldest parked message is 1 waits for a
// transaction that holds the hold's row, which discards message 1; once
// that transaction commits, the Done's condition (the hold's version) is
// evaluated again on the row it left, the write is refused, and the Done,
// computed again from the hold as it is, answers ErrConflict (1 is no
// longer parked): message 1 stays discarded and the hold counts message 2
// alone. (A Done that wrote from its first read would have counted 1
// twice: parked 0 with message 2 parked.)
//
// Under Repeatable Read (a database's default_transaction_isolation) the
// waiting write fails with a serialization error instead of reading the
// row again; the store takes it as the same refusal, and answers the same.
func TestPostgresAWriteWaitingOnTheHoldsRowChecksItAgain(t *testing.T) {
	t.Parallel()
	t.Run("read committed", func(t *testing.T) {
		t.Parallel()
		testAWriteWaitingOnTheHoldsRow(t, postgresDB(t))
	})
	t.Run("repeatable read", func(t *testing.T) {
		t.Parallel()
		cfg := pgtest.Config(t)
		cfg.Params = map[string]string{"default_transaction_isolation": "repeatable read"}
		db := sql.OpenDB(pgtest.Connector(t, cfg))
		t.Cleanup(func() { _ = db.Close() })
		db.SetMaxOpenConns(8)
		require.NoError(t, quarantine.MigratePostgres(t.Context(), db))
		var level string
		require.NoError(t, db.QueryRowContext(t.Context(), `SHOW transaction_isolation`).Scan(&level))
		require.Equal(t, "repeatable read", level)
		testAWriteWaitingOnTheHoldsRow(t, db)
	})
}

func testAWriteWaitingOnTheHoldsRow(t *testing.T, db *sql.DB) {
	store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	require.NoError(t, err)
	ctx, queue := t.Context(), "blocked.fifo"
	_, err = store.Park(ctx, queue, "g", []quarantine.Parked{parkedItem(t, 1), parkedItem(t, 2)}, true, "boom", t0)
	require.NoError(t, err)
	drain, err := store.BeginRedrive(ctx, queue, "g", t0.Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, seqKey(t, "1"), drain.Next)

	// Transaction A discards message 1, as Discard would, and holds the row.
	tx, pid := holdRowLocked(t, db, `UPDATE quarantine_holds SET parked = parked - 1, seq_next = $3, version = version + 1
		WHERE queue = $1 AND group_id = $2`, queue, []byte("g"), seqKey(t, "2"))
	_, err = tx.ExecContext(ctx, `UPDATE quarantine_messages SET status = 'discarded' WHERE queue = $1 AND group_id = $2 AND seq = $3`,
		queue, []byte("g"), seqKey(t, "1"))
	require.NoError(t, err)

	done := make(chan result, 1)
	go func() {
		h, err := store.Done(ctx, queue, "g", seqKey(t, "1"), drain.Epoch, t0.Add(2*time.Second))
		done <- result{h, err}
	}()
	wait, query := blockedBy(t, db, pid)
	require.Equal(t, "Lock", wait)
	require.Contains(t, query, "UPDATE quarantine_holds", "the Done's write waits on the hold's row")
	select {
	case r := <-done:
		t.Fatalf("the Done returned while its write should wait: %+v", r)
	default:
	}
	require.NoError(t, tx.Commit())

	r := <-done
	require.ErrorIs(t, r.err, quarantine.ErrConflict)
	h, err := store.Hold(ctx, queue, "g")
	require.NoError(t, err)
	require.Equal(t, quarantine.StateDraining, h.State)
	require.Equal(t, int64(1), h.Parked)
	require.Equal(t, seqKey(t, "2"), h.Next)
	ms, err := store.Messages(ctx, queue, "g", "", "", 0)
	require.NoError(t, err)
	require.Len(t, ms, 2)
	require.Equal(t, []quarantine.Status{quarantine.StatusDiscarded, quarantine.StatusParked}, []quarantine.Status{ms[0].Status, ms[1].Status})
}

// TestPostgresAParkWaitingOnTheHoldsRowKeepsWhatItWrote: a Park of
// messages 2 and 3 waits for a transaction that holds the hold's row and
// counts a Kafka record's failed attempt on it, as Failed does; once it
// commits, the Park is refused on the version, read again and written
// from the hold as the transaction left it: the count stays, and the
// messages are counted once.
func TestPostgresAParkWaitingOnTheHoldsRowKeepsWhatItWrote(t *testing.T) {
	t.Parallel()
	db := postgresDB(t)
	store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	require.NoError(t, err)
	ctx, queue := t.Context(), "blocked.fifo"
	_, err = store.Park(ctx, queue, "g", []quarantine.Parked{parkedItem(t, 1)}, true, "boom", t0)
	require.NoError(t, err)

	tx, pid := holdRowLocked(t, db, `UPDATE quarantine_holds SET fail_seq = $3, fail_count = 4, fail_cause = 'timeout', version = version + 1
		WHERE queue = $1 AND group_id = $2`, queue, []byte("g"), seqKey(t, "1"))
	parked := make(chan result, 1)
	go func() {
		h, err := store.Park(ctx, queue, "g", []quarantine.Parked{parkedItem(t, 2), parkedItem(t, 3)}, false, "", t0.Add(time.Second))
		parked <- result{h, err}
	}()
	wait, query := blockedBy(t, db, pid)
	require.Equal(t, "Lock", wait)
	require.Contains(t, query, "UPDATE quarantine_holds", "the Park's write waits on the hold's row")
	require.NoError(t, tx.Commit())

	r := <-parked
	require.NoError(t, r.err)
	require.Equal(t, quarantine.Attempts{Sequence: seqKey(t, "1"), Failed: 4, Cause: "timeout"}, r.h.Attempts)
	require.Equal(t, int64(3), r.h.Parked)
	h, err := store.Hold(ctx, queue, "g")
	require.NoError(t, err)
	require.Equal(t, r.h, h)
}

func parkedItem(t *testing.T, n int) quarantine.Parked {
	return quarantine.Parked{Sequence: seqKey(t, strconv.Itoa(n)), MessageID: "m-" + strconv.Itoa(n), Body: "body " + strconv.Itoa(n)}
}

// BenchmarkPostgresLane: one lane of ten messages through the quarantine
// on a real server: parked at once, a redrive begun, each copy done in
// order (the last releasing the hold); 12 writes of two statements each.
func BenchmarkPostgresLane(b *testing.B) {
	db := pgtest.DB(b)
	db.SetMaxOpenConns(4)
	require.NoError(b, quarantine.MigratePostgres(b.Context(), db))
	store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	require.NoError(b, err)
	ctx := b.Context()
	lane := make([]quarantine.Parked, 10)
	for i := range lane {
		k, err := quarantine.SeqKey(strconv.Itoa(i + 1))
		require.NoError(b, err)
		lane[i] = quarantine.Parked{Sequence: k, MessageID: "m", Body: `{"job":"job-42"}`}
	}
	b.ResetTimer()
	for i := range b.N {
		group := "g-" + strconv.Itoa(i)
		_, err := store.Park(ctx, "bench.fifo", group, lane, true, "boom", t0)
		require.NoError(b, err)
		h, err := store.BeginRedrive(ctx, "bench.fifo", group, t0)
		require.NoError(b, err)
		for _, p := range lane {
			_, err := store.Done(ctx, "bench.fifo", group, p.Sequence, h.Epoch, t0)
			require.NoError(b, err)
		}
	}
}
