// Package ddbattr is the one strict decoder of DynamoDB items, whichever
// form an item comes in: as the SDK returns it (internal/base/ddbitem
// binds it to the SDK's attribute values) or as a stream image Lambda
// delivers (Image, aws-lambda-go's attribute values). An item is read
// attribute by attribute, each getter naming the type it wants; the first
// problem is kept and every later read gives the zero value, so a decode
// reads straight through and checks Err once:
//
//   - an attribute of another type than the getter's is a problem naming
//     the attribute, the type wanted and the type found;
//   - a number (N) must be a whole number an int64 holds;
//   - a required attribute (String, Int, Millis) must be there; an
//     optional one (Opt...) reads as the zero value when absent;
//   - a nested map is read with the same rules, its problems naming the
//     attribute by its path from the item (outbox.payload.attempt_id);
//   - a string map holds only strings;
//   - times are epoch milliseconds (or seconds, for a TTL), read in UTC;
//   - a lax read (LaxString, LaxMap) is of an attribute the item can do
//     without: absent or of another type, it reads as nothing and is no
//     problem.
//
// What a value means (a known status, an id's shape) is the store's to
// check; this package checks only what DynamoDB's types say.
//
// It is a package apart from ddbitem so that a reader of stream images
// (the Kafka relay, through pkg/jobs/jobitem) does not link the SDK's
// DynamoDB types: their package's initialisation (its schemas) is 0.26 MB
// of an arm64 bootstrap, called or not.
package ddbattr

import (
	"maps"
	"slices"
	"strconv"
	"time"
)

// Error is the first problem of an item: which attribute, what is wrong.
type Error struct {
	Attribute string // its path from the item: "version", "outbox.payload.attempt_id"
	Problem   string // "missing", "want N, have S", "want an integer N, have N 1.5"
}

func (e *Error) Error() string { return "attribute " + e.Attribute + ": " + e.Problem }

// Form reads the values of one form of item: each of S, N, B and M gives
// a value of its DynamoDB type and true, or false for a value of another
// type; TypeName is DynamoDB's name of a value's type, with a number's
// value ("S", "N 1.5", "M"), for an error that says what an attribute
// holds.
type Form[V any] struct {
	S        func(V) (string, bool)
	N        func(V) (string, bool)
	B        func(V) ([]byte, bool)
	M        func(V) (map[string]V, bool)
	TypeName func(V) string
}

// Decoder reads one item, or one map nested in it. It is not safe for
// concurrent use.
type Decoder[V any] struct {
	item map[string]V
	form *Form[V]
	path string  // the map's path from the item and a dot: "" for the item, "outbox." in its outbox
	err  **Error // the item's first problem, shared with the maps nested in it
}

// New returns a decoder of item, whose values form reads; a nil item has
// no attributes.
func New[V any](item map[string]V, form *Form[V]) *Decoder[V] {
	return &Decoder[V]{item: item, form: form, err: new(*Error)}
}

// Err is the item's first problem, or nil.
func (d *Decoder[V]) Err() error {
	if *d.err == nil {
		return nil
	}
	return *d.err
}

func (d *Decoder[V]) fail(name, problem string) {
	if *d.err == nil {
		*d.err = &Error{Attribute: d.path + name, Problem: problem}
	}
}

// Len is the number of the attributes: 0 for no item.
func (d *Decoder[V]) Len() int { return len(d.item) }

// Names are the attributes' names, in order.
func (d *Decoder[V]) Names() []string { return slices.Sorted(maps.Keys(d.item)) }

// value reads the attribute with as, the reader of type want; ok is false
// when it is absent or, a problem then, of another type, and whatever it
// holds once the item has a problem (the package's rule: after the first
// problem every read gives the zero value).
func value[V, T any](d *Decoder[V], name, want string, required bool, as func(V) (T, bool)) (v T, ok bool) {
	if *d.err != nil {
		return v, false
	}
	av, present := d.item[name]
	if !present {
		if required {
			d.fail(name, "missing")
		}
		return v, false
	}
	v, ok = as(av)
	if !ok {
		d.fail(name, "want "+want+", have "+d.form.TypeName(av))
	}
	return v, ok
}

func (d *Decoder[V]) str(name string, required bool) string {
	v, _ := value(d, name, "S", required, d.form.S)
	return v
}

// String reads a required string (S).
func (d *Decoder[V]) String(name string) string { return d.str(name, true) }

// OptString reads an optional string (S): "" when absent.
func (d *Decoder[V]) OptString(name string) string { return d.str(name, false) }

// integer reads a number (N) that must be a whole int64; present is false
// when it is absent or a problem.
func (d *Decoder[V]) integer(name string, required bool) (n int64, present bool) {
	v, ok := value(d, name, "N", required, d.form.N)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		d.fail(name, "want an integer N, have N "+v)
		return 0, false
	}
	return n, true
}

// Int reads a required whole number (N).
func (d *Decoder[V]) Int(name string) int64 {
	n, _ := d.integer(name, true)
	return n
}

// OptInt reads an optional whole number (N): 0 when absent.
func (d *Decoder[V]) OptInt(name string) int64 {
	n, _ := d.integer(name, false)
	return n
}

func (d *Decoder[V]) millis(name string, required bool) time.Time {
	ms, ok := d.integer(name, required)
	if !ok {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Millis reads a required time, a number of epoch milliseconds, in UTC.
func (d *Decoder[V]) Millis(name string) time.Time { return d.millis(name, true) }

// OptMillis reads an optional time, a number of epoch milliseconds, in UTC:
// the zero time when absent.
func (d *Decoder[V]) OptMillis(name string) time.Time { return d.millis(name, false) }

// OptSeconds reads an optional time, a number of epoch seconds (as
// DynamoDB's TTL reads it), in UTC: the zero time when absent.
func (d *Decoder[V]) OptSeconds(name string) time.Time {
	s, ok := d.integer(name, false)
	if !ok {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

// OptBinary reads an optional binary value (B): nil when absent.
func (d *Decoder[V]) OptBinary(name string) []byte {
	v, _ := value(d, name, "B", false, d.form.B)
	return v
}

// OptMap returns a decoder of an optional map (M), whose problems are the
// item's; ok is false when the map is absent or a problem.
func (d *Decoder[V]) OptMap(name string) (sub *Decoder[V], ok bool) {
	v, ok := value(d, name, "M", false, d.form.M)
	if !ok {
		return nil, false
	}
	return &Decoder[V]{item: v, form: d.form, path: d.path + name + ".", err: d.err}, true
}

// LaxString reads an optional string (S) that the item can do without:
// ok is false when it is absent or of another type, which is no problem
// of the item (Err). For a reader that skips a bad value of an attribute
// it needs not (a job's history) rather than refuse the item.
func (d *Decoder[V]) LaxString(name string) (s string, ok bool) {
	av, present := d.item[name]
	if !present || *d.err != nil {
		return "", false
	}
	return d.form.S(av)
}

// LaxMap returns a decoder of an optional map (M) that the item can do
// without: ok is false when it is absent or of another type, which is no
// problem of the item (LaxString). Strict reads of the map (String, Int,
// ...) are the item's problems.
func (d *Decoder[V]) LaxMap(name string) (sub *Decoder[V], ok bool) {
	av, present := d.item[name]
	if !present || *d.err != nil {
		return nil, false
	}
	v, ok := d.form.M(av)
	if !ok {
		return nil, false
	}
	return &Decoder[V]{item: v, form: d.form, path: d.path + name + ".", err: d.err}, true
}

// OptStringMap reads an optional map (M) of strings: nil when it is absent,
// empty, or holds anything but strings (a problem).
func (d *Decoder[V]) OptStringMap(name string) map[string]string {
	sub, ok := d.OptMap(name)
	if !ok || len(sub.item) == 0 {
		return nil
	}
	out := make(map[string]string, len(sub.item))
	for _, k := range sub.Names() {
		v, ok := value(sub, k, "S", true, d.form.S)
		if !ok {
			return nil
		}
		out[k] = v
	}
	return out
}
