package quarantine

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The PostgresStore's statements and rows. Every argument is a string,
// []byte, int64, bool or nil, which database/sql passes to any driver,
// and carries its type in the statement ($1::text), so that no driver's
// own types are needed. A list (of groups, keys or messages) is one json
// argument, whatever its length, read with json_to_recordset; the
// producer's bytes travel in it as base64 and are stored as bytea.

// pgArgs are a statement's arguments.
type pgArgs []any

// add appends v and returns its placeholder, cast to typ.
func (a *pgArgs) add(v any, typ string) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a)) + "::" + typ
}

// statement is a statement and its arguments.
type statement struct {
	sql  string
	args pgArgs
}

type pgColumn struct{ name, typ string }

// holdFields are the hold's columns a write sets, in holdValues' order
// but the last (expires_at); holdColumns are those a read returns.
var (
	holdFields = []pgColumn{
		{"queue", "text"}, {"group_id", "bytea"}, {"state", "text"}, {"epoch", "bigint"}, {"parked", "bigint"},
		{"cause", "bytea"}, {"seq_from", "text"}, {"seq_through", "text"}, {"seq_next", "text"},
		{"held_at", "bigint"}, {"updated_at", "bigint"},
		{"fail_seq", "text"}, {"fail_count", "bigint"}, {"fail_cause", "bytea"},
	}
	holdWrites  = append(slices.Clip(holdFields), pgColumn{"expires_at", "bigint"})
	holdColumns = append(slices.Clip(holdFields), pgColumn{"version", "bigint"})
)

// messageColumns are a message's columns a read returns and Park writes
// (expires_at is NULL while it is parked).
var messageColumns = []pgColumn{
	{"queue", "text"}, {"group_id", "bytea"}, {"seq", "text"}, {"status", "text"},
	{"message_id", "bytea"}, {"body", "bytea"}, {"body_key", "text"}, {"body_md5", "text"}, {"body_size", "bigint"},
	{"attributes", "jsonb"}, {"deduplication_id", "bytea"}, {"nonce", "text"}, {"receive_count", "bigint"},
	{"cause", "bytea"}, {"parked_at", "bigint"}, {"updated_at", "bigint"},
	{"kafka", "boolean"}, {"record_key", "bytea"}, {"value", "bytea"}, {"headers", "jsonb"},
}

// columnList is "alias.name, ..." of cols ("name, ..." without alias).
func columnList(alias string, cols []pgColumn) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
		if alias != "" {
			out[i] = alias + "." + c.name
		}
	}
	return strings.Join(out, ", ")
}

// nullList is a NULL of each column's type, for the other half of a
// UNION.
func nullList(cols []pgColumn) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = "NULL::" + c.typ
	}
	return strings.Join(out, ", ")
}

// bin is s as a bytea argument: never nil, which would be NULL.
func bin(s string) []byte { return append([]byte{}, s...) }

func jsonArg(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// holdValues are hold h's holdWrites.
func holdValues(h HoldRecord) []any {
	var expires any // NULL: the hold is no tombstone
	if h.State == StateReleased {
		expires = expiry(h.UpdatedAt)
	}
	return []any{h.Queue, bin(h.Group), string(h.State), h.Epoch, h.Parked,
		bin(h.Cause), h.From, h.Through, h.Next,
		h.HeldAt.UnixMilli(), h.UpdatedAt.UnixMilli(),
		h.Attempts.Sequence, h.Attempts.Failed, bin(h.Attempts.Cause), expires}
}

// holdInsert is the INSERT of hold h at version 1, which inserts nothing
// when the group has a hold already, and then conflict (an ON CONFLICT
// clause, or "").
func holdInsert(a *pgArgs, h HoldRecord, conflict string) string {
	vals := holdValues(h)
	ph := make([]string, len(vals))
	for i, v := range vals {
		ph[i] = a.add(v, holdWrites[i].typ)
	}
	return "INSERT INTO quarantine_holds (" + columnList("", holdWrites) + ", version) VALUES (" +
		strings.Join(ph, ", ") + ", 1) ON CONFLICT (queue, group_id) " + conflict
}

// holdPut is the write of hold h over cur, returning a row when it is
// made: on the condition that the hold is still at cur's version, or
// still absent; the version raised.
func holdPut(a *pgArgs, h HoldRecord, cur storedHold) string {
	if !cur.ok {
		return holdInsert(a, h, "DO NOTHING RETURNING 1")
	}
	vals := holdValues(h)
	sets := make([]string, 0, len(vals))
	for i, v := range vals[2:] { // the key stays
		c := holdWrites[i+2]
		sets = append(sets, c.name+" = "+a.add(v, c.typ))
	}
	return "UPDATE quarantine_holds SET " + strings.Join(sets, ", ") + ", version = version + 1" +
		" WHERE queue = " + a.add(h.Queue, "text") + " AND group_id = " + a.add(bin(h.Group), "bytea") +
		" AND version = " + a.add(cur.version, "bigint") + " RETURNING 1"
}

// counts ends a write statement whose hold write is the CTE h and
// whose messages' write, if any, is the CTE m: how many rows each wrote.
func counts(messages bool) string {
	if !messages {
		return " SELECT (SELECT count(*) FROM h), 0::bigint"
	}
	return " SELECT (SELECT count(*) FROM h), (SELECT count(*) FROM m)"
}

// holdStatement writes hold h over cur, and no message.
func holdStatement(h HoldRecord, cur storedHold) statement {
	var a pgArgs
	return statement{"WITH h AS (" + holdPut(&a, h, cur) + ")" + counts(false), a}
}

// unparkStatement writes hold h over cur and, only if that write is
// made, message seq's status to (on the condition that it is parked, which
// the hold's version already says).
func unparkStatement(h HoldRecord, cur storedHold, seq string, to Status, now time.Time) statement {
	var a pgArgs
	put := holdPut(&a, h, cur)
	return statement{"WITH h AS (" + put + "), m AS (UPDATE quarantine_messages SET status = " + a.add(string(to), "text") +
		", updated_at = " + a.add(now.UnixMilli(), "bigint") + ", expires_at = " + a.add(expiry(now), "bigint") +
		" WHERE queue = " + a.add(h.Queue, "text") + " AND group_id = " + a.add(bin(h.Group), "bytea") +
		" AND seq = " + a.add(seq, "text") + " AND status = 'parked' AND EXISTS (SELECT 1 FROM h) RETURNING 1)" + counts(true), a}
}

// pgParked is a message Park inserts, as its json argument carries it.
type pgParked struct {
	Seq             string          `json:"seq"`
	MessageID       []byte          `json:"message_id"`
	Body            []byte          `json:"body"`
	BodyKey         string          `json:"body_key"`
	BodyMD5         string          `json:"body_md5"`
	BodySize        int64           `json:"body_size"`
	Attributes      json.RawMessage `json:"attributes"` // null when none
	DeduplicationID []byte          `json:"deduplication_id"`
	Nonce           string          `json:"nonce"`
	ReceiveCount    int64           `json:"receive_count"`
	Cause           []byte          `json:"cause"`
	Kafka           bool            `json:"kafka"`
	RecordKey       []byte          `json:"record_key"`
	Value           []byte          `json:"value"`
	Headers         json.RawMessage `json:"headers"` // null when none
}

// pgHeader is a Kafka header in the headers column: both as base64, the
// value null when it is.
type pgHeader struct {
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
}

// checkPostgresItems refuses what the attributes' jsonb cannot keep: a
// string that is not UTF-8 or holds NUL, which no SQS message attribute
// does (its name and type are ASCII, its string value XML's characters).
func checkPostgresItems(items []Parked) error {
	for i, p := range items {
		for name, a := range p.Attributes {
			for _, s := range []string{name, a.DataType, a.StringValue} {
				if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
					return fmt.Errorf("item %d: attribute %q: %q is not UTF-8 without NUL, as SQS's attributes are", i, name, s)
				}
			}
		}
	}
	return nil
}

func parkedRow(p *Parked) (pgParked, error) {
	r := pgParked{
		Seq: p.Sequence, MessageID: bin(p.MessageID), Body: bin(p.Body), BodyKey: p.BodyKey, BodyMD5: p.BodyMD5,
		BodySize: p.BodySize, DeduplicationID: bin(p.DeduplicationID), Nonce: p.Nonce,
		ReceiveCount: int64(p.ReceiveCount), Cause: bin(p.Cause),
	}
	var err error
	if len(p.Attributes) > 0 {
		if r.Attributes, err = json.Marshal(p.Attributes); err != nil {
			return r, err
		}
	}
	if p.Kafka == nil {
		return r, nil
	}
	r.Kafka, r.RecordKey, r.Value = true, p.Kafka.Key, p.Kafka.Value
	if len(p.Kafka.Headers) > 0 {
		hs := make([]pgHeader, len(p.Kafka.Headers))
		for i, h := range p.Kafka.Headers {
			hs[i] = pgHeader{Key: bin(h.Key), Value: h.Value}
		}
		r.Headers, err = json.Marshal(hs)
	}
	return r, err
}

// parkStatement writes hold h over cur and, only if that write is made,
// inserts the messages fresh, parked at now (none of them is stored: the
// hold's version says so).
func parkStatement(h HoldRecord, cur storedHold, fresh []Parked, now time.Time) (statement, error) {
	rows := make([]pgParked, len(fresh))
	for i := range fresh {
		r, err := parkedRow(&fresh[i])
		if err != nil {
			return statement{}, err
		}
		rows[i] = r
	}
	list, err := jsonArg(rows)
	if err != nil {
		return statement{}, err
	}
	var a pgArgs
	put := holdPut(&a, h, cur)
	at := a.add(now.UnixMilli(), "bigint")
	return statement{"WITH h AS (" + put + "), m AS (INSERT INTO quarantine_messages (" + columnList("", messageColumns) + ")" +
		" SELECT " + a.add(h.Queue, "text") + ", " + a.add(bin(h.Group), "bytea") + ", x.seq, 'parked'," +
		" decode(x.message_id, 'base64'), decode(x.body, 'base64'), x.body_key, x.body_md5, x.body_size, x.attributes," +
		" decode(x.deduplication_id, 'base64'), x.nonce, x.receive_count, decode(x.cause, 'base64'), " + at + ", " + at + "," +
		" x.kafka, decode(x.record_key, 'base64'), decode(x.value, 'base64'), x.headers" +
		" FROM json_to_recordset(" + a.add(list, "json") + ") AS x (seq text, message_id text, body text, body_key text," +
		" body_md5 text, body_size bigint, attributes jsonb, deduplication_id text, nonce text, receive_count bigint," +
		" cause text, kafka boolean, record_key text, value text, headers jsonb)" +
		" WHERE EXISTS (SELECT 1 FROM h) RETURNING 1)" + counts(true), a}, nil
}

// failedStatement sets the group's hold's Attempts to next, the
// attempts after f, on the condition that the hold is as f says it was
// read: held or draining (SeenHeld), else released or absent (then it
// is created released, as failedHold makes it), and its tombstone's
// expiry moves on; and counting f.Seen of f's record, or none of it.
// It writes one row when the condition holds, none otherwise.
func failedStatement(queue, group string, f Failure, next Attempts, now time.Time) statement {
	var a pgArgs
	set := func() string {
		return "fail_seq = " + a.add(next.Sequence, "text") + ", fail_count = " + a.add(next.Failed, "bigint") +
			", fail_cause = " + a.add(bin(next.Cause), "bytea") + ", version = quarantine_holds.version + 1"
	}
	seenCounts := f.Seen.Sequence == f.Sequence && f.Seen.Failed > 0
	counted := func() string {
		if seenCounts {
			return "quarantine_holds.fail_seq = " + a.add(f.Sequence, "text") +
				" AND quarantine_holds.fail_count = " + a.add(f.Seen.Failed, "bigint")
		}
		return "quarantine_holds.fail_seq <> " + a.add(f.Sequence, "text") // none, or another record's
	}
	key := func() string {
		return " WHERE queue = " + a.add(queue, "text") + " AND group_id = " + a.add(bin(group), "bytea")
	}
	switch {
	case f.SeenHeld:
		q := "UPDATE quarantine_holds SET " + set() + key() + " AND state IN ('held', 'draining') AND "
		return statement{q + counted(), a}
	case seenCounts: // a released hold that counts the record: no insert
		q := "UPDATE quarantine_holds SET " + set() + ", expires_at = " + a.add(expiry(now), "bigint") + key() + " AND state = 'released' AND "
		return statement{q + counted(), a}
	}
	ins := holdInsert(&a, failedHold(HoldRecord{}, false, queue, group, f, now), "DO UPDATE SET ")
	q := ins + set() + ", expires_at = EXCLUDED.expires_at WHERE quarantine_holds.state = 'released' AND "
	return statement{q + counted(), a}
}

// readStatement reads the holds of groups and the messages keys, in one
// statement: a row per hold (true first) or message (false first).
func readStatement(queue string, groups []string, keys []ItemKey) (string, pgArgs, error) {
	gs := make([][]byte, len(groups))
	for i, g := range groups {
		gs[i] = bin(g)
	}
	type key struct {
		G []byte `json:"g"`
		S string `json:"s"`
	}
	ks := make([]key, len(keys))
	for i, k := range keys {
		ks[i] = key{bin(k.Group), k.Sequence}
	}
	gl, err := jsonArg(gs)
	if err != nil {
		return "", nil, err
	}
	kl, err := jsonArg(ks)
	if err != nil {
		return "", nil, err
	}
	var a pgArgs
	q := a.add(queue, "text")
	query := "SELECT true, " + columnList("h", holdColumns) + ", " + nullList(messageColumns) +
		" FROM quarantine_holds h WHERE h.queue = " + q +
		" AND h.group_id IN (SELECT decode(g.v, 'base64') FROM json_array_elements_text(" + a.add(gl, "json") + ") AS g (v))" +
		" UNION ALL SELECT false, " + nullList(holdColumns) + ", " + columnList("m", messageColumns) +
		" FROM quarantine_messages m WHERE m.queue = " + q +
		" AND (m.group_id, m.seq) IN (SELECT decode(k.g, 'base64'), k.s FROM json_to_recordset(" + a.add(kl, "json") + ") AS k (g text, s text))"
	return query, a, nil
}

// seqSet reads a json array of sequence keys (NULL: none).
func seqSet(list []byte) (map[string]bool, error) {
	out := map[string]bool{}
	if list == nil {
		return out, nil
	}
	var seqs []string
	if err := json.Unmarshal(list, &seqs); err != nil {
		return nil, fmt.Errorf("the stored messages' keys: %w", err)
	}
	for _, s := range seqs {
		out[s] = true
	}
	return out, nil
}

// holdRow is a hold as a read returns it: holdColumns, each NULL when a
// read's join found no hold.
type holdRow struct {
	queue, state, from, through, next, failSeq           sql.NullString
	group, cause, failCause                              []byte
	epoch, parked, heldAt, updatedAt, failCount, version sql.NullInt64
}

func (r *holdRow) dest() []any {
	return []any{&r.queue, &r.group, &r.state, &r.epoch, &r.parked, &r.cause, &r.from, &r.through, &r.next,
		&r.heldAt, &r.updatedAt, &r.failSeq, &r.failCount, &r.failCause, &r.version}
}

// stored is the hold read; ok is false when there was none.
func (r *holdRow) stored() (storedHold, error) {
	if !r.queue.Valid {
		return storedHold{}, nil
	}
	h := HoldRecord{
		Queue: r.queue.String, Group: string(r.group), State: State(r.state.String),
		Epoch: r.epoch.Int64, Parked: r.parked.Int64, Cause: string(r.cause),
		From: r.from.String, Through: r.through.String, Next: r.next.String,
		HeldAt: time.UnixMilli(r.heldAt.Int64).UTC(), UpdatedAt: time.UnixMilli(r.updatedAt.Int64).UTC(),
		Attempts: Attempts{Sequence: r.failSeq.String, Failed: r.failCount.Int64, Cause: string(r.failCause)},
	}
	switch h.State {
	case StateHeld, StateDraining, StateReleased:
	default:
		return storedHold{}, fmt.Errorf("quarantine: hold of group %q of %s: state %q", h.Group, h.Queue, h.State)
	}
	return storedHold{rec: h, version: r.version.Int64, ok: true}, nil
}

// messageRow is a message as a read returns it: messageColumns.
type messageRow struct {
	queue, seq, status, bodyKey, bodyMD5, nonce                              sql.NullString
	group, messageID, body, dedupID, cause, recordKey, value, attrs, headers []byte
	bodySize, receiveCount, parkedAt, updatedAt                              sql.NullInt64
	kafka                                                                    sql.NullBool
}

func (r *messageRow) dest() []any {
	return []any{&r.queue, &r.group, &r.seq, &r.status, &r.messageID, &r.body, &r.bodyKey, &r.bodyMD5, &r.bodySize,
		&r.attrs, &r.dedupID, &r.nonce, &r.receiveCount, &r.cause, &r.parkedAt, &r.updatedAt,
		&r.kafka, &r.recordKey, &r.value, &r.headers}
}

func (r *messageRow) parked() (Parked, error) {
	p := Parked{
		Queue: r.queue.String, Group: string(r.group), Sequence: r.seq.String, Status: Status(r.status.String),
		MessageID: string(r.messageID), Body: string(r.body), BodyKey: r.bodyKey.String, BodyMD5: r.bodyMD5.String,
		BodySize: r.bodySize.Int64, DeduplicationID: string(r.dedupID), Nonce: r.nonce.String,
		ReceiveCount: int(r.receiveCount.Int64), Cause: string(r.cause),
		ParkedAt: time.UnixMilli(r.parkedAt.Int64).UTC(), UpdatedAt: time.UnixMilli(r.updatedAt.Int64).UTC(),
	}
	fail := func(err error) (Parked, error) {
		return Parked{}, fmt.Errorf("quarantine: message %s of group %q of %s: %w", SeqNumber(p.Sequence), p.Group, p.Queue, err)
	}
	switch p.Status {
	case StatusParked, StatusDone, StatusDiscarded:
	default:
		return fail(fmt.Errorf("status %q", p.Status))
	}
	if r.attrs != nil {
		if err := json.Unmarshal(r.attrs, &p.Attributes); err != nil {
			return fail(fmt.Errorf("attributes: %w", err))
		}
	}
	if !r.kafka.Bool {
		return p, nil
	}
	p.Kafka = &KafkaRecord{Key: r.recordKey, Value: r.value}
	if r.headers != nil {
		var hs []pgHeader
		if err := json.Unmarshal(r.headers, &hs); err != nil {
			return fail(fmt.Errorf("headers: %w", err))
		}
		for _, h := range hs {
			p.Kafka.Headers = append(p.Kafka.Headers, KafkaHeader{Key: string(h.Key), Value: h.Value})
		}
	}
	return p, nil
}
