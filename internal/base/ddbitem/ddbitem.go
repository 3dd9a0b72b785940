// Package ddbitem is the one strict decoder of DynamoDB items, as the SDK
// returns them, that the jobs, quarantine and projection stores share. An
// item is read attribute by attribute, each getter naming the type it
// wants; the first problem is kept and every later read gives the zero
// value, so a decode reads straight through and checks Err once:
//
//   - an attribute of another type than the getter's is a problem naming
//     the attribute, the type wanted and the type found;
//   - a number (N) must be a whole number an int64 holds;
//   - a required attribute (String, Int, Millis) must be there; an
//     optional one (Opt...) reads as the zero value when absent;
//   - a nested map is read with the same rules, its problems naming the
//     attribute by its path from the item (outbox.payload.attempt_id);
//   - a string map holds only strings;
//   - times are epoch milliseconds (or seconds, for a TTL), read in UTC.
//
// What a value means (a known status, an id's shape) is the store's to
// check; this package checks only what DynamoDB's types say.
package ddbitem

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Error is the first problem of an item: which attribute, what is wrong.
type Error struct {
	Attribute string // its path from the item: "version", "outbox.payload.attempt_id"
	Problem   string // "missing", "want N, have S", "want an integer N, have N 1.5"
}

func (e *Error) Error() string { return "attribute " + e.Attribute + ": " + e.Problem }

// Decoder reads one item, or one map nested in it. It is not safe for
// concurrent use.
type Decoder struct {
	item map[string]types.AttributeValue
	path string  // the map's path from the item and a dot: "" for the item, "outbox." in its outbox
	err  **Error // the item's first problem, shared with the maps nested in it
}

// New returns a decoder of item; a nil item has no attributes.
func New(item map[string]types.AttributeValue) *Decoder {
	return &Decoder{item: item, err: new(*Error)}
}

// Err is the item's first problem, or nil.
func (d *Decoder) Err() error {
	if *d.err == nil {
		return nil
	}
	return *d.err
}

func (d *Decoder) fail(name, problem string) {
	if *d.err == nil {
		*d.err = &Error{Attribute: d.path + name, Problem: problem}
	}
}

// Names are the attributes' names, in order.
func (d *Decoder) Names() []string { return slices.Sorted(maps.Keys(d.item)) }

// value returns the attribute as type T; ok is false when it is absent
// or, a problem then, of another type.
func value[T types.AttributeValue](d *Decoder, name, want string, required bool) (v T, ok bool) {
	av, present := d.item[name]
	if !present {
		if required {
			d.fail(name, "missing")
		}
		return v, false
	}
	v, ok = av.(T)
	if !ok {
		d.fail(name, "want "+want+", have "+TypeName(av))
	}
	return v, ok
}

// TypeName is DynamoDB's name of av's type, with a number's value ("S",
// "N 1.5", "M"), for an error that says what an attribute holds.
func TypeName(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N " + v.Value
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberM:
		return "M"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	}
	return fmt.Sprintf("%T", av)
}

func (d *Decoder) str(name string, required bool) string {
	v, ok := value[*types.AttributeValueMemberS](d, name, "S", required)
	if !ok {
		return ""
	}
	return v.Value
}

// String reads a required string (S).
func (d *Decoder) String(name string) string { return d.str(name, true) }

// OptString reads an optional string (S): "" when absent.
func (d *Decoder) OptString(name string) string { return d.str(name, false) }

// integer reads a number (N) that must be a whole int64; present is false
// when it is absent or a problem.
func (d *Decoder) integer(name string, required bool) (n int64, present bool) {
	v, ok := value[*types.AttributeValueMemberN](d, name, "N", required)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		d.fail(name, "want an integer N, have N "+v.Value)
		return 0, false
	}
	return n, true
}

// Int reads a required whole number (N).
func (d *Decoder) Int(name string) int64 {
	n, _ := d.integer(name, true)
	return n
}

// OptInt reads an optional whole number (N): 0 when absent.
func (d *Decoder) OptInt(name string) int64 {
	n, _ := d.integer(name, false)
	return n
}

func (d *Decoder) millis(name string, required bool) time.Time {
	ms, ok := d.integer(name, required)
	if !ok {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Millis reads a required time, a number of epoch milliseconds, in UTC.
func (d *Decoder) Millis(name string) time.Time { return d.millis(name, true) }

// OptMillis reads an optional time, a number of epoch milliseconds, in UTC:
// the zero time when absent.
func (d *Decoder) OptMillis(name string) time.Time { return d.millis(name, false) }

// OptSeconds reads an optional time, a number of epoch seconds (as
// DynamoDB's TTL reads it), in UTC: the zero time when absent.
func (d *Decoder) OptSeconds(name string) time.Time {
	s, ok := d.integer(name, false)
	if !ok {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

// OptBinary reads an optional binary value (B): nil when absent.
func (d *Decoder) OptBinary(name string) []byte {
	v, ok := value[*types.AttributeValueMemberB](d, name, "B", false)
	if !ok {
		return nil
	}
	return v.Value
}

// OptMap returns a decoder of an optional map (M), whose problems are the
// item's; ok is false when the map is absent or a problem.
func (d *Decoder) OptMap(name string) (sub *Decoder, ok bool) {
	v, ok := value[*types.AttributeValueMemberM](d, name, "M", false)
	if !ok {
		return nil, false
	}
	return &Decoder{item: v.Value, path: d.path + name + ".", err: d.err}, true
}

// OptStringMap reads an optional map (M) of strings: nil when it is absent,
// empty, or holds anything but strings (a problem).
func (d *Decoder) OptStringMap(name string) map[string]string {
	sub, ok := d.OptMap(name)
	if !ok || len(sub.item) == 0 {
		return nil
	}
	out := make(map[string]string, len(sub.item))
	for _, k := range sub.Names() {
		v, ok := value[*types.AttributeValueMemberS](sub, k, "S", true)
		if !ok {
			return nil
		}
		out[k] = v.Value
	}
	return out
}
