package jobitem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/fifoworker/fifoworker/internal/base/ddbattr"
)

// The PostgreSQL image of a job is the JSON object of its row in the jobs
// table, as to_jsonb(row) renders it: one key per column, named as the
// item's attributes (Attr*), numbers as JSON numbers (times in epoch
// milliseconds, expires_at in epoch seconds), the outbox, the spec and the
// error as JSON objects of the item's maps (OutboxAttr*, FailureAttr*),
// and a NULL column as null. pkg/jobs's PostgresStore writes it into the
// job_outbox table (image, prev_image) in the statement of each
// transition, and reads its rows in the same form, so the store, the relay
// and a test read a row and an outbox image alike, with the same errors.
//
// It is decoded by the item's one decoder (Decode), through a form of
// ddbattr's that reads JSON values: a JSON string is an S, a number an N,
// an object an M. So the rules are the item's: a number must be a whole
// int64, a required attribute must be there, a map of strings holds only
// strings, an unknown status is an error. A null column is an absent
// attribute, as SQL NULL is; a null anywhere else is a value of the wrong
// type. Keys the decoder does not read (the row's generated columns) are
// ignored, as an item's index attributes are.

// FromPostgresImage decodes the PostgreSQL image of a job (a row of the
// jobs table as to_jsonb renders it, or EncodePostgresImage's form) into a
// Job. No image (empty input or JSON null: a creation's prev_image) is an
// error matching ErrNotJob; input that is not one JSON object, or an
// attribute of the wrong type, or an unknown status, is an error naming
// what is wrong. It never panics, whatever the input.
func FromPostgresImage(image []byte) (Job, error) {
	v, err := parseJSON(image)
	if err != nil {
		return Job{}, err
	}
	if v == nil {
		return Job{}, fmt.Errorf("jobs: no image: %w", ErrNotJob)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return Job{}, fmt.Errorf("jobs: image: want a JSON object, have %s", jsonTypeName(v))
	}
	attrs := make(map[string]any, len(obj))
	for k, v := range obj {
		if v != nil { // a NULL column is an absent attribute
			attrs[k] = v
		}
	}
	if len(attrs) == 0 {
		return Job{}, fmt.Errorf("jobs: image: an object without attributes")
	}
	return Decode(ddbattr.New(attrs, &jsonForm))
}

// parseJSON reads exactly one JSON value, keeping numbers as written.
func parseJSON(b []byte) (any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("jobs: image: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("jobs: image: data after the JSON value")
	}
	return v, nil
}

// jsonForm reads the values encoding/json decodes (with UseNumber) as
// DynamoDB's types: string S, json.Number N, object M. JSON has no binary.
var jsonForm = ddbattr.Form[any]{
	S:        func(v any) (string, bool) { s, ok := v.(string); return s, ok },
	N:        func(v any) (string, bool) { n, ok := v.(json.Number); return string(n), ok },
	B:        func(any) ([]byte, bool) { return nil, false },
	M:        func(v any) (map[string]any, bool) { m, ok := v.(map[string]any); return m, ok },
	TypeName: jsonTypeName,
}

// jsonTypeName names a JSON value's type as DynamoDB names its types where
// they match ("S", "N 1.5", "M"), and as JSON does where they do not.
func jsonTypeName(v any) string {
	switch v := v.(type) {
	case string:
		return "S"
	case json.Number:
		return "N " + string(v)
	case map[string]any:
		return "M"
	case []any:
		return "JSON array"
	case bool:
		return "JSON boolean"
	case nil:
		return "JSON null"
	}
	return fmt.Sprintf("%T", v)
}

// EncodePostgresImage renders j in the form FromPostgresImage reads: the
// attributes PostgresStore's row holds, a zero optional one left out (as
// a NULL column reads). FromPostgresImage(EncodePostgresImage(j)) is j for
// any job the store can hold. The store builds the images it writes in SQL
// (to_jsonb of the row); this is the same form built in Go, for a test or
// a tool that writes an outbox row by hand.
func EncodePostgresImage(j Job) ([]byte, error) {
	if err := ValidateID(j.ID); err != nil {
		return nil, fmt.Errorf("jobs: encode image: %w", err)
	}
	m := map[string]any{
		AttrJobID:      j.ID,
		AttrIntentID:   j.IntentID,
		AttrTenant:     j.Tenant,
		AttrStatus:     string(j.Status),
		AttrGeneration: j.Generation,
		AttrVersion:    j.Version,
		AttrProgress:   j.Progress,
		AttrOutbox:     OutboxJSON(j.Outbox),
		AttrCreatedAt:  j.CreatedAt.UnixMilli(),
		AttrUpdatedAt:  j.UpdatedAt.UnixMilli(),
	}
	if j.LeaseOwner != "" {
		m[AttrLeaseOwner] = j.LeaseOwner
	}
	if !j.LeaseExpiresAt.IsZero() {
		m[AttrLeaseExpiresAt] = j.LeaseExpiresAt.UnixMilli()
	}
	if j.Result != (Result{}) {
		m[AttrResultKey], m[AttrResultSHA256], m[AttrResultSize] = j.Result.Key, j.Result.SHA256, j.Result.Size
	}
	if len(j.Spec) > 0 {
		m[AttrSpec] = j.Spec
	}
	if j.Error != (Failure{}) {
		m[AttrError] = FailureJSON(j.Error)
	}
	if !j.ExpiresAt.IsZero() {
		m[AttrExpiresAt] = j.ExpiresAt.Unix()
	}
	if h := EncodeHistory(j.History); h != nil {
		m[AttrHistory] = h
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("jobs: encode image of %s: %w", j.ID, err)
	}
	return b, nil
}

// OutboxJSON is the outbox column's object of m: its id, type and version,
// and its payload unless it is empty (as the item leaves it out).
func OutboxJSON(m Message) map[string]any {
	o := map[string]any{OutboxAttrID: m.ID, OutboxAttrType: m.Type, OutboxAttrVersion: json.Number(strconv.FormatInt(m.Version, 10))}
	if len(m.Payload) > 0 {
		o[OutboxAttrPayload] = m.Payload
	}
	return o
}

// FailureJSON is the error column's object of f.
func FailureJSON(f Failure) map[string]any {
	return map[string]any{FailureAttrCode: f.Code, FailureAttrMessage: f.Message}
}
