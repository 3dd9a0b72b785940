package quarantine

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/fifoworker/fifoworker/internal/base/backoff"
	"github.com/fifoworker/fifoworker/internal/base/pgcode"
	"github.com/fifoworker/fifoworker/internal/base/pgmigrate"
)

// PostgresStore is the Store on PostgreSQL: the tables quarantine_holds
// and quarantine_messages, which MigratePostgres creates (the package
// documentation describes them). It applies the rules of rules.go as
// DynamoStore does: it reads the hold (with what the rule needs: which
// messages exist, the oldest parked) in one statement, computes the hold
// with the shared rules, and writes it in one statement on the condition
// that the hold's version is still the one read, with the messages it
// parks or unparks. Under Read Committed a write that waited for another
// transaction on the hold's row evaluates that condition again on the
// row that transaction left, so a write computed from a hold that has
// changed is refused, and the store reads it again and retries.
//
// It takes a *sql.DB and imports no driver: the caller registers one
// (internal/base/pgwire), so that a program on DynamoDB links none.
type PostgresStore struct {
	db *sql.DB
}

var _ Store = (*PostgresStore)(nil)

// PostgresConfig configures a PostgresStore.
type PostgresConfig struct {
	// DB is the pool of a database MigratePostgres has brought up to date.
	// Required. The store uses one connection per call, and holds none
	// between calls.
	DB *sql.DB
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c PostgresConfig) Validate() error {
	if c.DB == nil {
		return fmt.Errorf("%w: DB is nil", ErrInvalidConfig)
	}
	return nil
}

// NewPostgresStore returns a store on cfg.DB, or an error wrapping
// ErrInvalidConfig.
func NewPostgresStore(cfg PostgresConfig) (*PostgresStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &PostgresStore{db: cfg.DB}, nil
}

//go:embed postgres/*.sql
var postgresMigrations embed.FS

// migrations is the quarantine's set of migrations, component
// "quarantine".
func migrations() (pgmigrate.Set, error) {
	sub, err := fs.Sub(postgresMigrations, "postgres")
	return pgmigrate.Set{Component: "quarantine", FS: sub}, err
}

// MigratePostgres brings the quarantine's tables in db up to date: it
// applies the migrations of component "quarantine" that db has not
// applied yet, in one transaction (pgmigrate).
func MigratePostgres(ctx context.Context, db *sql.DB) error {
	if db == nil {
		return fmt.Errorf("quarantine: migrate: %w: DB is nil", ErrInvalidConfig)
	}
	set, err := migrations()
	if err == nil {
		_, err = pgmigrate.Apply(ctx, db, set)
	}
	if err != nil {
		return fmt.Errorf("quarantine: migrate: %w", err)
	}
	return nil
}

// Read implements Store: one statement, so one snapshot of the holds and
// the messages.
func (s *PostgresStore) Read(ctx context.Context, queue string, groups []string, keys []ItemKey) (map[string]HoldRecord, map[ItemKey]Parked, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	fail := func(err error) (map[string]HoldRecord, map[ItemKey]Parked, error) {
		return nil, nil, fmt.Errorf("quarantine: read %d holds and %d messages of %s: %w", len(groups), len(keys), queue, err)
	}
	query, args, err := readStatement(queue, groups, keys)
	if err != nil {
		return fail(err)
	}
	holds, items := map[string]HoldRecord{}, map[ItemKey]Parked{}
	var isHold bool
	var h holdRow
	var m messageRow
	err = s.each(ctx, query, args, append(append([]any{&isHold}, h.dest()...), m.dest()...), func() error {
		if isHold {
			cur, err := h.stored()
			holds[cur.rec.Group] = cur.rec
			return err
		}
		p, err := m.parked()
		items[ItemKey{Group: p.Group, Sequence: p.Sequence}] = p
		return err
	})
	if err != nil {
		return fail(err)
	}
	return holds, items, nil
}

// Park implements Store: one statement reads the hold and which of items
// are stored; a second writes the hold the rules compute (on the
// condition of the version read, or that there is still none) and, only
// if that write was made, inserts the messages not stored: two round
// trips, and two more for each time the hold changed in between.
func (s *PostgresStore) Park(ctx context.Context, queue, group string, items []Parked, hold bool, cause string, now time.Time) (HoldRecord, error) {
	c := parkCall{queue: queue, group: group, items: items, hold: hold, cause: cause, now: millis(now)}
	fail, err := c.begin(ctx, checkPostgresItems)
	if err != nil {
		return HoldRecord{}, err
	}
	h, err := rounds(ctx, func() (HoldRecord, bool, error) {
		cur, exists, err := s.readPark(ctx, queue, group, items)
		if err != nil {
			return HoldRecord{}, false, err
		}
		h, fresh, write, err := c.apply(cur.rec, cur.ok, func(seq string) bool { return exists[seq] })
		if err != nil {
			return HoldRecord{}, false, err
		}
		if !write {
			return h, true, nil
		}
		st, err := parkStatement(h, cur, fresh, c.now)
		if err != nil {
			return HoldRecord{}, false, err
		}
		done, err := s.writeHold(ctx, st, int64(len(fresh)), h, cur)
		return h, done, err
	})
	if err != nil {
		return fail(err)
	}
	return h, nil
}

// Done implements Store: one statement reads the hold, the message's
// status and the oldest message parked after it; a second writes the
// hold (on the condition of the version read) and, only if that write
// was made, marks the message done. Two round trips, and two more for
// each time the hold changed in between.
func (s *PostgresStore) Done(ctx context.Context, queue, group, seq string, epoch int64, now time.Time) (HoldRecord, error) {
	return s.unpark(ctx, doneCall(queue, group, seq, epoch), now)
}

// Discard implements Store as Done does, under any state but released.
func (s *PostgresStore) Discard(ctx context.Context, queue, group, seq string, now time.Time) (HoldRecord, error) {
	return s.unpark(ctx, discardCall(queue, group, seq), now)
}

func (s *PostgresStore) unpark(ctx context.Context, c unparkCall, now time.Time) (HoldRecord, error) {
	fail, err := c.begin(ctx)
	if err != nil {
		return HoldRecord{}, err
	}
	queue, group, seq, to := c.queue, c.group, c.seq, c.to
	now = millis(now)
	h, err := rounds(ctx, func() (HoldRecord, bool, error) {
		cur, after, err := s.readUnpark(ctx, queue, group, seq)
		if err != nil {
			return HoldRecord{}, false, err
		}
		if err := c.refusal(cur.rec, cur.ok); err != nil {
			return HoldRecord{}, false, err
		}
		if after.status != StatusParked {
			return HoldRecord{}, false, fmt.Errorf("the message is not parked: %w", ErrNotParked)
		}
		next := ""
		if needsNext(cur.rec, seq) {
			next = after.next
		}
		h := unparkedHold(cur.rec, seq, next, now)
		done, err := s.writeHold(ctx, unparkStatement(h, cur, seq, to, now), 1, h, cur)
		return h, done, err
	})
	if err != nil {
		return fail(err)
	}
	return h, nil
}

// BeginRedrive implements Store: one statement reads the hold and the
// oldest message parked; a second writes the redriven hold on the
// condition of the version read. Two round trips, and two more for each
// time the hold changed in between.
func (s *PostgresStore) BeginRedrive(ctx context.Context, queue, group string, now time.Time) (HoldRecord, error) {
	if err := ctx.Err(); err != nil {
		return HoldRecord{}, err
	}
	fail := func(err error) (HoldRecord, error) {
		return HoldRecord{}, fmt.Errorf("quarantine: begin a redrive of group %q of %s: %w", group, queue, err)
	}
	now = millis(now)
	h, err := rounds(ctx, func() (HoldRecord, bool, error) {
		cur, after, err := s.readUnpark(ctx, queue, group, "")
		if err != nil {
			return HoldRecord{}, false, err
		}
		if !cur.ok || cur.rec.State == StateReleased {
			return HoldRecord{}, false, fmt.Errorf("no hold, or a released one: %w", ErrNoHold)
		}
		oldest := ""
		if needsOldest(cur.rec) {
			oldest = after.next
		}
		h := redrivenHold(cur.rec, oldest, now)
		done, err := s.writeHold(ctx, holdStatement(h, cur), 0, h, cur)
		return h, done, err
	})
	if err != nil {
		return fail(err)
	}
	return h, nil
}

// Failed implements Store: one statement, which sets the hold's Attempts
// (and, for a group without a record, creates it released) on the
// condition that its state and Attempts are as f.Seen and f.SeenHeld
// say; no read. When the condition fails, the hold is read (one more
// round trip) and the statement made anew from it. It raises the hold's
// version, so that a Park or an unpark computed from the hold before it
// is refused and computed again, keeping the count.
func (s *PostgresStore) Failed(ctx context.Context, queue, group string, f Failure, now time.Time) (Attempts, error) {
	if err := ctx.Err(); err != nil {
		return Attempts{}, err
	}
	fail := func(err error) (Attempts, error) {
		return Attempts{}, fmt.Errorf("quarantine: count a failed attempt of %s of group %q of %s: %w", SeqNumber(f.Sequence), group, queue, err)
	}
	if err := checkFailure(queue, group, f); err != nil {
		return fail(err)
	}
	now = millis(now)
	for round := 1; ; round++ {
		next := attemptsAfter(f.Seen, f)
		st := failedStatement(queue, group, f, next, now)
		var n int64
		res, err := s.db.ExecContext(ctx, st.sql, st.args...)
		if err == nil {
			n, err = res.RowsAffected()
		}
		if lostRace(err) {
			n, err = 0, nil
		}
		switch {
		case err != nil:
			return fail(err)
		case n == 1:
			return next, nil
		case round == maxRounds:
			return fail(fmt.Errorf("the hold changed under each of %d writes", maxRounds))
		}
		if err := lostRound(ctx, round); err != nil {
			return fail(err)
		}
		cur, _, err := s.readUnpark(ctx, queue, group, "")
		if err != nil {
			return fail(err)
		}
		f.Seen, f.SeenHeld = cur.rec.Attempts, cur.ok && cur.rec.State != StateReleased
	}
}

// Hold implements Store: one statement.
func (s *PostgresStore) Hold(ctx context.Context, queue, group string) (HoldRecord, error) {
	if err := ctx.Err(); err != nil {
		return HoldRecord{}, err
	}
	cur, _, err := s.readUnpark(ctx, queue, group, "")
	if err == nil && !cur.ok {
		err = ErrNoHold
	}
	if err != nil {
		return HoldRecord{}, fmt.Errorf("quarantine: hold of group %q of %s: %w", group, queue, err)
	}
	return cur.rec, nil
}

// Messages implements Store: one statement.
func (s *PostgresStore) Messages(ctx context.Context, queue, group string, status Status, after string, limit int) ([]Parked, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fail := func(err error) ([]Parked, error) {
		return nil, fmt.Errorf("quarantine: messages of group %q of %s: %w", group, queue, err)
	}
	var a pgArgs
	var lim any // NULL: no limit
	if limit > 0 {
		lim = int64(limit)
	}
	st := a.add(string(status), "text")
	query := "SELECT " + columnList("m", messageColumns) + " FROM quarantine_messages m" +
		" WHERE m.queue = " + a.add(queue, "text") + " AND m.group_id = " + a.add(bin(group), "bytea") +
		" AND m.seq > " + a.add(after, "text") + " AND (" + st + " = '' OR m.status = " + st + ")" +
		" ORDER BY m.seq LIMIT " + a.add(lim, "bigint")
	var out []Parked
	var m messageRow
	err := s.each(ctx, query, a, m.dest(), func() error {
		p, err := m.parked()
		out = append(out, p)
		return err
	})
	if err != nil {
		return fail(err)
	}
	return out, nil
}

// Holds implements Store: one statement, on the index of the holds not
// released.
func (s *PostgresStore) Holds(ctx context.Context, queue string) ([]HoldRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fail := func(err error) ([]HoldRecord, error) {
		return nil, fmt.Errorf("quarantine: holds of %s: %w", queue, err)
	}
	var out []HoldRecord
	var h holdRow
	query := "SELECT " + columnList("h", holdColumns) + " FROM quarantine_holds h WHERE h.queue = $1::text AND h.state <> 'released'"
	err := s.each(ctx, query, pgArgs{queue}, h.dest(), func() error {
		cur, err := h.stored()
		out = append(out, cur.rec)
		return err
	})
	if err != nil {
		return fail(err)
	}
	sortHolds(out)
	return out, nil
}

// PurgeExpired deletes at most limit tombstones whose expires_at is
// strictly before now (Unix seconds, as DynamoDB's TTL compares them):
// messages done or discarded, oldest first, then released holds none of
// whose messages is left, in one statement, and returns how many rows it
// deleted. PostgreSQL has no TTL, so a deployment calls it on a schedule
// (as the sweeper runs) until it returns fewer than limit; until then an
// expired tombstone is read like any other, as DynamoDB returns an
// expired item until its TTL deletes it. Rows another transaction holds
// are skipped, and a hold held again since the statement began (its
// expires_at cleared) is not deleted: the lock's re-check reads the row
// that write left.
func (s *PostgresStore) PurgeExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("quarantine: purge expired tombstones: limit %d is not positive", limit)
	}
	var n int
	err := s.db.QueryRowContext(ctx, `WITH m AS (
	DELETE FROM quarantine_messages WHERE (queue, group_id, seq) IN (
		SELECT queue, group_id, seq FROM quarantine_messages WHERE expires_at < $1::bigint
		ORDER BY expires_at LIMIT $2::bigint FOR UPDATE SKIP LOCKED)
	RETURNING queue, group_id, seq
), h AS (
	DELETE FROM quarantine_holds WHERE (queue, group_id) IN (
		SELECT queue, group_id FROM quarantine_holds x WHERE expires_at < $1::bigint
			AND NOT EXISTS (SELECT FROM quarantine_messages y WHERE y.queue = x.queue AND y.group_id = x.group_id
				AND NOT EXISTS (SELECT FROM m WHERE m.queue = y.queue AND m.group_id = y.group_id AND m.seq = y.seq))
		ORDER BY expires_at LIMIT greatest($2::bigint - (SELECT count(*) FROM m), 0) FOR UPDATE SKIP LOCKED)
	RETURNING 1
)
SELECT (SELECT count(*) FROM m) + (SELECT count(*) FROM h)`, now.Unix(), int64(limit)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("quarantine: purge expired tombstones: %w", err)
	}
	return n, nil
}

// rounds runs round, a read of the hold and a write conditional on it,
// until it is done or fails: a round that is not done found the hold
// changed between its read and its write, and the next reads it anew
// after a jittered wait (lostRound). A round's refusal means that another
// write was made, so some writer always progresses; maxRounds bounds the
// rounds one call loses.
func rounds(ctx context.Context, round func() (h HoldRecord, done bool, err error)) (HoldRecord, error) {
	for n := 1; ; n++ {
		h, done, err := round()
		if err != nil || done {
			return h, err
		}
		if n == maxRounds {
			return HoldRecord{}, fmt.Errorf("the hold changed under each of %d writes", maxRounds)
		}
		if err := lostRound(ctx, n); err != nil {
			return HoldRecord{}, err
		}
	}
}

// Waits after the n-th lost round of a PostgreSQL write: a jittered
// exponential wait from pgRetryBase, at most pgRetryLimit (about 0.3 s in
// all before the last of maxRounds). Without it a call's rounds run back
// to back against writers in a loop of their own (a redrive's copies, an
// operator) and lose in step with them: in the conformance suite's
// concurrent parks, dones and redrives, a park lost all 12 rounds in 1 to 3
// runs of 16; DynamoStore waits likewise (retryBase, retryLimit). The
// quarantine is the cold path of a poisoned group, where a few
// milliseconds cost nothing.
const (
	pgRetryBase  = time.Millisecond
	pgRetryLimit = 50 * time.Millisecond
)

// lostRound waits after the n-th lost round, or returns ctx's error.
func lostRound(ctx context.Context, n int) error {
	return backoff.Sleep(ctx, backoff.Delay(pgRetryBase, pgRetryLimit, n))
}

// write runs a write statement (parkStatement, unparkStatement,
// holdStatement) and reports whether it was made: the hold written and
// messages rows with it. A hold written without its messages cannot
// happen (a message changes only with its hold's version), and is
// reported as the broken invariant it would be.
func (s *PostgresStore) write(ctx context.Context, st statement, messages int64) (bool, error) {
	var holds, changed int64
	if err := s.db.QueryRowContext(ctx, st.sql, st.args...).Scan(&holds, &changed); err != nil {
		if lostRace(err) {
			return false, nil
		}
		return false, err
	}
	switch {
	case holds == 0:
		return false, nil
	case changed != messages:
		return false, fmt.Errorf("the hold was written with %d of its %d messages: a message changed without its hold", changed, messages)
	}
	return true, nil
}

// writeHold is write of st, which writes hold h over cur, and recognises
// a write whose answer was lost as its own: an error that is not the
// server's (no SQLSTATE: the connection failed, possibly after the commit)
// is followed by a read of the hold, and when the hold is h at the version
// after cur's, the write was made (the messages with it: one statement),
// as DynamoStore recognises a write the SDK sent again. A caller that sent
// the same write again would instead be refused (ErrConflict, ErrNotParked
// or ErrNoHold) by the write its lost answer made. Otherwise the error
// stands.
func (s *PostgresStore) writeHold(ctx context.Context, st statement, messages int64, h HoldRecord, cur storedHold) (bool, error) {
	done, err := s.write(ctx, st, messages)
	if _, fromServer := pgcode.Of(err); err == nil || fromServer {
		return done, err
	}
	now, _, rerr := s.readUnpark(ctx, h.Queue, h.Group, "")
	if rerr == nil && now.ok && now.version == cur.version+1 && now.rec == h {
		return true, nil
	}
	return false, err
}

// each runs query and scans each row it returns into dest, then calls
// row.
func (s *PostgresStore) each(ctx context.Context, query string, args pgArgs, dest []any, row func() error) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if err := row(); err != nil {
			return err
		}
	}
	return rows.Err()
}

// lostRace reports whether err is a statement's refusal by a competing
// transaction, rolled back whole, rather than a failure: a serialization
// failure (40001: under Repeatable Read or Serializable, set as a
// database's default, a write that waited for another transaction on its
// row fails instead of reading the row that transaction left) or a
// deadlock (40P01). Such a write is computed again from a new read, as a
// write refused on the hold's version is.
func lostRace(err error) bool { return pgcode.LostRace(err) }

// afterRead is what readUnpark reads beside the hold.
type afterRead struct {
	// next is the oldest message parked after the sequence key asked
	// for ("" when none).
	next string
	// status is the message's at that key ("" when there is none).
	status Status
}

// readUnpark reads, in one statement, the group's hold, the oldest
// message parked after seq, and the status of the message at seq.
func (s *PostgresStore) readUnpark(ctx context.Context, queue, group, seq string) (storedHold, afterRead, error) {
	var a pgArgs
	q, g, sq := a.add(queue, "text"), a.add(bin(group), "bytea"), a.add(seq, "text")
	query := "SELECT " + columnList("h", holdColumns) +
		", (SELECT m.seq FROM quarantine_messages m WHERE m.queue = " + q + " AND m.group_id = " + g +
		" AND m.status = 'parked' AND m.seq > " + sq + " ORDER BY m.seq LIMIT 1)" +
		", (SELECT m.status FROM quarantine_messages m WHERE m.queue = " + q + " AND m.group_id = " + g + " AND m.seq = " + sq + ")" +
		holdJoin(q, g)
	var h holdRow
	var next, status sql.NullString
	if err := s.db.QueryRowContext(ctx, query, a...).Scan(append(h.dest(), &next, &status)...); err != nil {
		return storedHold{}, afterRead{}, err
	}
	cur, err := h.stored()
	return cur, afterRead{next: next.String, status: Status(status.String)}, err
}

// readPark reads, in one statement, the group's hold and which of items
// are stored (under any status).
func (s *PostgresStore) readPark(ctx context.Context, queue, group string, items []Parked) (storedHold, map[string]bool, error) {
	seqs := make([]string, len(items))
	for i, p := range items {
		seqs[i] = p.Sequence
	}
	var a pgArgs
	q, g := a.add(queue, "text"), a.add(bin(group), "bytea")
	list, err := jsonArg(seqs)
	if err != nil {
		return storedHold{}, nil, err
	}
	query := "SELECT " + columnList("h", holdColumns) +
		", (SELECT json_agg(m.seq) FROM quarantine_messages m WHERE m.queue = " + q + " AND m.group_id = " + g +
		" AND m.seq IN (SELECT json_array_elements_text(" + a.add(list, "json") + ")))" +
		holdJoin(q, g)
	var h holdRow
	var stored []byte
	if err := s.db.QueryRowContext(ctx, query, a...).Scan(append(h.dest(), &stored)...); err != nil {
		return storedHold{}, nil, err
	}
	cur, err := h.stored()
	if err != nil {
		return storedHold{}, nil, err
	}
	exists, err := seqSet(stored)
	return cur, exists, err
}

// holdJoin is the FROM clause of a read of one hold that returns one row
// whether or not the hold exists (its columns NULL when it does not).
func holdJoin(queue, group string) string {
	return " FROM (VALUES (1)) AS one (x) LEFT JOIN quarantine_holds h ON h.queue = " + queue + " AND h.group_id = " + group
}
