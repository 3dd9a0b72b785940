//go:build integration

package quarantine_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgmigrate"
	"github.com/fifoworker/fifoworker/internal/base/pgwire"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// TestPostgresMigrations: the schema is applied to an empty database,
// and to one at version 1 (the tables without their indexes) holding a
// hold and messages of each status, which survive version 2 and on which
// the store goes on.
func TestPostgresMigrations(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	empty := pgtest.DB(t)
	require.NoError(t, quarantine.MigratePostgres(ctx, empty))
	require.NoError(t, quarantine.MigratePostgres(ctx, empty), "a current schema is left as it is")
	current, err := pgmigrate.Current(ctx, empty)
	require.NoError(t, err)
	require.Equal(t, 2, current["quarantine"])

	db := pgtest.DB(t)
	v1, err := os.ReadFile("postgres/0001_tables.sql")
	require.NoError(t, err)
	_, err = pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: "quarantine", FS: fstest.MapFS{"0001_tables.sql": {Data: v1}}})
	require.NoError(t, err)
	store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	require.NoError(t, err)
	queue := "migrated.fifo"
	_, err = store.Park(ctx, queue, "g", []quarantine.Parked{parkedItem(t, 1), parkedItem(t, 2), parkedItem(t, 3)}, true, "boom", t0)
	require.NoError(t, err)
	_, err = store.BeginRedrive(ctx, queue, "g", t0.Add(time.Second))
	require.NoError(t, err)
	_, err = store.Done(ctx, queue, "g", seqKey(t, "1"), 1, t0.Add(2*time.Second))
	require.NoError(t, err)
	_, err = store.Discard(ctx, queue, "g", seqKey(t, "3"), t0.Add(3*time.Second))
	require.NoError(t, err)
	beforeHold, err := store.Hold(ctx, queue, "g")
	require.NoError(t, err)
	before, err := store.Messages(ctx, queue, "g", "", "", 0)
	require.NoError(t, err)

	require.NoError(t, quarantine.MigratePostgres(ctx, db))
	current, err = pgmigrate.Current(ctx, db)
	require.NoError(t, err)
	require.Equal(t, 2, current["quarantine"])
	h, err := store.Hold(ctx, queue, "g")
	require.NoError(t, err)
	require.Equal(t, beforeHold, h)
	after, err := store.Messages(ctx, queue, "g", "", "", 0)
	require.NoError(t, err)
	require.Equal(t, before, after)
	holds, err := store.Holds(ctx, queue)
	require.NoError(t, err)
	require.Equal(t, []quarantine.HoldRecord{h}, holds)
	h, err = store.Done(ctx, queue, "g", seqKey(t, "2"), 1, t0.Add(4*time.Second))
	require.NoError(t, err)
	require.Equal(t, quarantine.StateReleased, h.State)
	var indexes int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM pg_indexes
		WHERE tablename LIKE 'quarantine_%' AND indexname NOT LIKE '%_pkey'`).Scan(&indexes))
	require.Equal(t, 4, indexes, "0002's indexes")
}

// TestPostgresTombstonesExpire: a released hold and a message done or
// discarded carry expires_at, TombstoneTTL after their last write, in
// Unix seconds; a hold not released and a parked message carry none. A
// failed attempt counted on a released hold moves its expiry on, even
// when the caller read the hold held (its write is refused on the state
// and made again from the hold as it is).
func TestPostgresTombstonesExpire(t *testing.T) {
	t.Parallel()
	db := postgresDB(t)
	store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	require.NoError(t, err)
	ctx, queue := t.Context(), "tombstones.fifo"
	expires := func(table, seq string) sql.NullInt64 {
		t.Helper()
		var e sql.NullInt64
		q := `SELECT expires_at FROM quarantine_holds WHERE queue = $1 AND group_id = $2`
		args := []any{queue, []byte("g")}
		if table == "messages" {
			q, args = `SELECT expires_at FROM quarantine_messages WHERE queue = $1 AND group_id = $2 AND seq = $3`, append(args, seq)
		}
		require.NoError(t, db.QueryRowContext(ctx, q, args...).Scan(&e))
		return e
	}
	ttl := func(at time.Time) sql.NullInt64 {
		return sql.NullInt64{Int64: at.Add(quarantine.TombstoneTTL).Unix(), Valid: true}
	}
	_, err = store.Park(ctx, queue, "g", []quarantine.Parked{parkedItem(t, 1), parkedItem(t, 2)}, true, "boom", t0)
	require.NoError(t, err)
	require.False(t, expires("holds", "").Valid)
	require.False(t, expires("messages", seqKey(t, "1")).Valid)
	held, err := store.Hold(ctx, queue, "g")
	require.NoError(t, err)

	t1, t2, t3 := t0.Add(time.Hour), t0.Add(2*time.Hour), t0.Add(3*time.Hour)
	_, err = store.Discard(ctx, queue, "g", seqKey(t, "1"), t1)
	require.NoError(t, err)
	_, err = store.Discard(ctx, queue, "g", seqKey(t, "2"), t2)
	require.NoError(t, err)
	require.Equal(t, ttl(t1), expires("messages", seqKey(t, "1")))
	require.Equal(t, ttl(t2), expires("messages", seqKey(t, "2")))
	require.Equal(t, ttl(t2), expires("holds", ""))

	a, err := store.Failed(ctx, queue, "g", quarantine.Failure{Sequence: seqKey(t, "3"), Cause: "late", Seen: held.Attempts, SeenHeld: true}, t3)
	require.NoError(t, err)
	require.Equal(t, quarantine.Attempts{Sequence: seqKey(t, "3"), Failed: 1, Cause: "late"}, a)
	require.Equal(t, ttl(t3), expires("holds", ""), "the released hold's expiry moves on with its count")
	h, err := store.Hold(ctx, queue, "g")
	require.NoError(t, err)
	require.Equal(t, t2, h.UpdatedAt, "a count changes nothing else of the hold")
}

// TestPostgresPurgeExpired: PurgeExpired deletes the tombstones whose
// expiry is strictly before now, messages first and then the released
// holds with no message left, at most limit rows a call; a hold held or
// released later, and a parked message, stay; a purged group starts anew.
func TestPostgresPurgeExpired(t *testing.T) {
	t.Parallel()
	db := postgresDB(t)
	store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	require.NoError(t, err)
	ctx, queue := t.Context(), "purge.fifo"
	park := func(group string, ns ...int) {
		t.Helper()
		items := make([]quarantine.Parked, len(ns))
		for i, n := range ns {
			items[i] = parkedItem(t, n)
		}
		_, err := store.Park(ctx, queue, group, items, true, "boom", t0)
		require.NoError(t, err)
	}
	discard := func(group string, n int, at time.Time) {
		t.Helper()
		_, err := store.Discard(ctx, queue, group, seqKey(t, strconv.Itoa(n)), at)
		require.NoError(t, err)
	}
	park("old", 1, 2)
	discard("old", 1, t0)
	discard("old", 2, t0) // released at t0: three tombstones expiring at t0+TTL
	park("late", 1)
	discard("late", 1, t0.Add(time.Hour)) // two, an hour later
	park("held", 1, 2)
	discard("held", 1, t0) // a tombstone under a hold still held

	expiry := t0.Add(quarantine.TombstoneTTL)
	n, err := store.PurgeExpired(ctx, expiry, 100)
	require.NoError(t, err)
	require.Zero(t, n, "a tombstone expiring at now is kept")
	_, err = store.PurgeExpired(ctx, expiry, 0)
	require.Error(t, err)

	purge := func(limit int) int {
		t.Helper()
		n, err := store.PurgeExpired(ctx, expiry.Add(time.Second), limit)
		require.NoError(t, err)
		return n
	}
	require.Equal(t, 2, purge(2), "at most limit rows: two of the three expired messages")
	require.Equal(t, 2, purge(2), "the third, and the released hold whose last message goes in the same statement")
	require.Zero(t, purge(2))
	_, err = store.Hold(ctx, queue, "old")
	require.ErrorIs(t, err, quarantine.ErrNoHold)
	ms, err := store.Messages(ctx, queue, "held", "", "", 0)
	require.NoError(t, err)
	require.Len(t, ms, 1, "the expired tombstone of a held group is gone, its parked message stays")
	require.Equal(t, quarantine.StatusParked, ms[0].Status)
	h, err := store.Hold(ctx, queue, "late")
	require.NoError(t, err)
	require.Equal(t, quarantine.StateReleased, h.State)
	h, err = store.Hold(ctx, queue, "held")
	require.NoError(t, err)
	require.Equal(t, int64(1), h.Parked)

	// A released hold is kept while a message of its is: its tombstone
	// would otherwise outlive it (here its expiry is moved back by hand).
	_, err = db.ExecContext(ctx, `UPDATE quarantine_holds SET expires_at = 0 WHERE queue = $1 AND group_id = $2`, queue, []byte("late"))
	require.NoError(t, err)
	require.Zero(t, purge(2))
	_, err = store.Hold(ctx, queue, "late")
	require.NoError(t, err)

	park("old", 1)
	h, err = store.Hold(ctx, queue, "old")
	require.NoError(t, err)
	require.Equal(t, int64(1), h.Parked)
	require.Equal(t, quarantine.StateHeld, h.State)
}

// TestPostgresKeepsEveryByte: a Kafka key (the group) with NUL bytes, a
// cause that is not UTF-8, a 256 KiB body (the queues' largest message:
// the store keeps it in its row, as it keeps any body a Quarantine does
// not send to its BodyStore) and a lane of 1,000 messages in one Park
// (DynamoDB's transaction takes 99) are kept as given; an attribute that
// no SQS message carries (NUL in its value) is refused, and nothing is
// written.
func TestPostgresKeepsEveryByte(t *testing.T) {
	t.Parallel()
	db := postgresDB(t)
	store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	require.NoError(t, err)
	ctx, queue := t.Context(), "bytes"
	group := quarantine.KafkaGroup("\x00\x00\x00\x00\x00\x00\x00\x07")
	require.Contains(t, group, "\x00", "a binary key is its own group")
	cause := "bad record \xff\xfe\x00 end"
	lane := make([]quarantine.Parked, 1000)
	for i := range lane {
		lane[i] = parkedItem(t, i+1)
		lane[i].Cause = cause
	}
	lane[0].Body = strings.Repeat("x", 256<<10)
	lane[0].BodySize = int64(len(lane[0].Body))
	h, err := store.Park(ctx, queue, group, lane, true, cause, t0)
	require.NoError(t, err)
	require.Equal(t, int64(1000), h.Parked)
	got, err := store.Hold(ctx, queue, group)
	require.NoError(t, err)
	require.Equal(t, h, got)
	require.Equal(t, cause, got.Cause)
	ms, err := store.Messages(ctx, queue, group, "", "", 0)
	require.NoError(t, err)
	require.Len(t, ms, 1000)
	require.Equal(t, lane[0].Body, ms[0].Body)
	require.Equal(t, cause, ms[999].Cause)
	require.Equal(t, group, ms[999].Group)
	holds, err := store.Holds(ctx, queue)
	require.NoError(t, err)
	require.Equal(t, []quarantine.HoldRecord{h}, holds)

	bad := parkedItem(t, 1)
	bad.Attributes = map[string]quarantine.MessageAttribute{"a": {DataType: "String", StringValue: "nul\x00"}}
	_, err = store.Park(ctx, queue, "other", []quarantine.Parked{bad}, true, "boom", t0)
	require.ErrorContains(t, err, "not UTF-8 without NUL")
	_, err = store.Hold(ctx, queue, "other")
	require.ErrorIs(t, err, quarantine.ErrNoHold)
}

// TestPostgresRoundTrips pins the statements each call sends (each one
// round trip: the driver prepares no statement): a read and a write
// for Park, Done, Discard and BeginRedrive, the write alone for Failed
// when the caller's read is current, one statement for each read.
func TestPostgresRoundTrips(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	db := sql.OpenDB(countingConnector{pgtest.Connector(t, pgtest.Config(t)), &n})
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	ctx := t.Context()
	require.NoError(t, quarantine.MigratePostgres(ctx, db))
	store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	require.NoError(t, err)
	queue := "costs.fifo"
	count := func(call func() error) int64 {
		t.Helper()
		n.Store(0)
		require.NoError(t, call())
		return n.Load()
	}
	lane := make([]quarantine.Parked, 50)
	keys := make([]quarantine.ItemKey, 50)
	for i := range lane {
		lane[i] = parkedItem(t, i+1)
		keys[i] = quarantine.ItemKey{Group: "g", Sequence: lane[i].Sequence}
	}
	var h quarantine.HoldRecord
	require.Equal(t, int64(2), count(func() (err error) { h, err = store.Park(ctx, queue, "g", lane, true, "boom", t0); return err }), "Park")
	require.Equal(t, int64(2), count(func() error { _, err := store.Discard(ctx, queue, "g", seqKey(t, "50"), t0); return err }), "Discard")
	require.Equal(t, int64(2), count(func() error { _, err := store.BeginRedrive(ctx, queue, "g", t0); return err }), "BeginRedrive")
	require.Equal(t, int64(2), count(func() error { _, err := store.Done(ctx, queue, "g", seqKey(t, "1"), 1, t0); return err }), "Done")
	f := quarantine.Failure{Sequence: seqKey(t, "2"), Cause: "boom", SeenHeld: true, Seen: h.Attempts}
	require.Equal(t, int64(1), count(func() error { _, err := store.Failed(ctx, queue, "g", f, t0); return err }), "Failed, read current")
	require.Equal(t, int64(3), count(func() error { _, err := store.Failed(ctx, queue, "g", f, t0); return err }), "Failed, read stale: refused, read, written")
	require.Equal(t, int64(1), count(func() error { _, err := store.Hold(ctx, queue, "g"); return err }), "Hold")
	require.Equal(t, int64(1), count(func() error { _, err := store.Holds(ctx, queue); return err }), "Holds")
	require.Equal(t, int64(1), count(func() error { _, err := store.Messages(ctx, queue, "g", "", "", 0); return err }), "Messages")
	require.Equal(t, int64(1), count(func() error { _, _, err := store.Read(ctx, queue, []string{"g"}, keys); return err }), "Read")
}

// countingConnector counts the statements its connections run.
type countingConnector struct {
	driver.Connector
	n *atomic.Int64
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return countingConn{conn.(*pgwire.Conn), c.n}, nil
}

type countingConn struct {
	*pgwire.Conn
	n *atomic.Int64
}

func (c countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.n.Add(1)
	return c.Conn.QueryContext(ctx, query, args)
}

func (c countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.n.Add(1)
	return c.Conn.ExecContext(ctx, query, args)
}
