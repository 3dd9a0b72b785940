package ddbitem_test

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/ddbitem"
)

func s(v string) types.AttributeValue  { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue  { return &types.AttributeValueMemberN{Value: v} }
func b(v ...byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }
func m(v map[string]types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: v}
}

type item = map[string]types.AttributeValue

// problem is the decoder's error as an *ddbitem.Error: which attribute,
// what is wrong.
func problem(t *testing.T, d *ddbitem.Decoder) *ddbitem.Error {
	t.Helper()
	var e *ddbitem.Error
	require.True(t, errors.As(d.Err(), &e), "want an *ddbitem.Error, have %v", d.Err())
	return e
}

// Every getter reads its type, and an optional one reads an absent
// attribute as the zero value without a problem.
func TestAttributesOfTheirTypeAreRead(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1793782800123).UTC()
	d := ddbitem.New(item{
		"s": s("job-42"), "empty": s(""), "n": n("-9223372036854775808"), "ms": n("1793782800123"),
		"sec": n("1796374800"), "bin": b(1, 2), "spec": m(item{"a": s("1"), "b": s("")}),
	})
	require.Equal(t, "job-42", d.String("s"))
	require.Equal(t, "job-42", d.OptString("s"))
	require.Empty(t, d.String("empty"), "an empty S is present")
	require.Equal(t, int64(-9223372036854775808), d.Int("n"))
	require.Equal(t, at, d.Millis("ms"))
	require.Equal(t, time.UTC, d.Millis("ms").Location())
	require.Equal(t, at, d.OptMillis("ms"))
	require.Equal(t, time.Unix(1796374800, 0).UTC(), d.OptSeconds("sec"))
	require.Equal(t, time.UTC, d.OptSeconds("sec").Location())
	require.Equal(t, []byte{1, 2}, d.OptBinary("bin"))
	require.Equal(t, map[string]string{"a": "1", "b": ""}, d.OptStringMap("spec"))

	require.Empty(t, d.OptString("none"))
	require.Zero(t, d.OptInt("none"))
	require.True(t, d.OptMillis("none").IsZero())
	require.True(t, d.OptSeconds("none").IsZero())
	require.Nil(t, d.OptBinary("none"))
	require.Nil(t, d.OptStringMap("none"))
	sub, ok := d.OptMap("none")
	require.False(t, ok)
	require.Nil(t, sub)
	require.NoError(t, d.Err())
}

// A required attribute that is absent is a problem naming it.
func TestARequiredAttributeMustBeThere(t *testing.T) {
	t.Parallel()
	for name, read := range map[string]func(*ddbitem.Decoder){
		"String": func(d *ddbitem.Decoder) { d.String("x") },
		"Int":    func(d *ddbitem.Decoder) { d.Int("x") },
		"Millis": func(d *ddbitem.Decoder) { d.Millis("x") },
	} {
		d := ddbitem.New(item{"other": s("y")})
		read(d)
		require.Equal(t, &ddbitem.Error{Attribute: "x", Problem: "missing"}, problem(t, d), name)
		require.EqualError(t, d.Err(), "attribute x: missing", name)
	}
}

// An attribute of another type than the getter's is a problem naming the
// attribute, the type wanted and the type it has (a number with its
// value), whether the attribute is required or optional.
func TestAnAttributeOfAnotherTypeIsAProblem(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		value types.AttributeValue
		read  func(*ddbitem.Decoder)
		want  string
	}{
		{"String of an N", n("7"), func(d *ddbitem.Decoder) { d.String("x") }, "want S, have N 7"},
		{"OptString of a BOOL", &types.AttributeValueMemberBOOL{Value: true}, func(d *ddbitem.Decoder) { d.OptString("x") }, "want S, have BOOL"},
		{"Int of an S", s("3"), func(d *ddbitem.Decoder) { d.Int("x") }, "want N, have S"},
		{"OptInt of a NULL", &types.AttributeValueMemberNULL{Value: true}, func(d *ddbitem.Decoder) { d.OptInt("x") }, "want N, have NULL"},
		{"Millis of an S", s("now"), func(d *ddbitem.Decoder) { d.Millis("x") }, "want N, have S"},
		{"OptMillis of an L", &types.AttributeValueMemberL{}, func(d *ddbitem.Decoder) { d.OptMillis("x") }, "want N, have L"},
		{"OptSeconds of an SS", &types.AttributeValueMemberSS{}, func(d *ddbitem.Decoder) { d.OptSeconds("x") }, "want N, have SS"},
		{"OptBinary of an S", s("AQI="), func(d *ddbitem.Decoder) { d.OptBinary("x") }, "want B, have S"},
		{"OptMap of an S", s("{}"), func(d *ddbitem.Decoder) { d.OptMap("x") }, "want M, have S"},
		{"OptStringMap of a BS", &types.AttributeValueMemberBS{}, func(d *ddbitem.Decoder) { d.OptStringMap("x") }, "want M, have BS"},
		{"OptInt of an NS", &types.AttributeValueMemberNS{}, func(d *ddbitem.Decoder) { d.OptInt("x") }, "want N, have NS"},
		{"OptInt of a B", b(1), func(d *ddbitem.Decoder) { d.OptInt("x") }, "want N, have B"},
		{"OptInt of an M", m(nil), func(d *ddbitem.Decoder) { d.OptInt("x") }, "want N, have M"},
	} {
		d := ddbitem.New(item{"x": c.value})
		c.read(d)
		require.Equal(t, &ddbitem.Error{Attribute: "x", Problem: c.want}, problem(t, d), c.name)
	}
}

// A number must be a whole number an int64 holds: DynamoDB's N also takes
// fractions, exponents and 38 digits, none of which the tables write.
func TestANumberMustBeAnInt64(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"1.5", "1e3", "9223372036854775808", "-9223372036854775809", " 1", "", "0x10", "+"} {
		d := ddbitem.New(item{"x": n(v)})
		d.OptInt("x")
		require.Equal(t, &ddbitem.Error{Attribute: "x", Problem: "want an integer N, have N " + v}, problem(t, d), "%q", v)
	}
	for _, v := range []string{"9223372036854775807", "-9223372036854775808", "0", "-0", "+7", "007"} {
		d := ddbitem.New(item{"x": n(v)})
		d.Int("x")
		require.NoError(t, d.Err(), "%q", v)
	}
}

// A nested map is read with the same rules; its problems name the
// attribute by its path from the item, and are the item's.
func TestANestedMapIsReadWithItsPath(t *testing.T) {
	t.Parallel()
	d := ddbitem.New(item{"outbox": m(item{"id": s("job-42/v3"), "version": n("3"),
		"payload": m(item{"attempt_id": n("7")})})})
	out, ok := d.OptMap("outbox")
	require.True(t, ok)
	require.Equal(t, "job-42/v3", out.String("id"))
	require.Equal(t, int64(3), out.Int("version"))
	require.NoError(t, d.Err())
	require.Nil(t, out.OptStringMap("payload"))
	require.Equal(t, &ddbitem.Error{Attribute: "outbox.payload.attempt_id", Problem: "want S, have N 7"}, problem(t, d))
	require.Equal(t, d.Err(), out.Err(), "one problem for the whole item")

	d = ddbitem.New(item{"outbox": m(item{})})
	out, _ = d.OptMap("outbox")
	out.String("id")
	require.EqualError(t, d.Err(), "attribute outbox.id: missing")
}

// A string map's values must all be strings; an empty map is none. A
// map's names come in order, so that the problem reported is the same
// every time.
func TestAStringMapHoldsOnlyStrings(t *testing.T) {
	t.Parallel()
	d := ddbitem.New(item{"spec": m(item{})})
	require.Nil(t, d.OptStringMap("spec"))
	require.NoError(t, d.Err())

	for range 20 {
		d = ddbitem.New(item{"spec": m(item{"a": s("1"), "c": b(1), "b": n("2"), "d": s("4")})})
		require.Nil(t, d.OptStringMap("spec"), "no map from a bad one")
		require.Equal(t, &ddbitem.Error{Attribute: "spec.b", Problem: "want S, have N 2"}, problem(t, d))
	}
	sub, ok := ddbitem.New(item{"m": m(item{"z": s(""), "a": s(""), "m": s("")})}).OptMap("m")
	require.True(t, ok)
	require.Equal(t, []string{"a", "m", "z"}, sub.Names())
}

// The first problem is the one kept: later reads neither replace it nor
// add to it, and a nested map's problem is not replaced by its parent's.
func TestTheFirstProblemIsKept(t *testing.T) {
	t.Parallel()
	d := ddbitem.New(item{"a": s("x"), "b": n("y"), "m": m(item{"c": s("z")})})
	d.Int("a")
	d.Int("b")
	d.String("none")
	require.Equal(t, &ddbitem.Error{Attribute: "a", Problem: "want N, have S"}, problem(t, d))

	d = ddbitem.New(item{"a": s("x"), "m": m(item{"c": s("z")})})
	sub, _ := d.OptMap("m")
	sub.Int("c")
	d.Int("a")
	require.Equal(t, &ddbitem.Error{Attribute: "m.c", Problem: "want N, have S"}, problem(t, d))
}

// A getter that finds a problem gives the zero value.
func TestAProblemReadsAsTheZeroValue(t *testing.T) {
	t.Parallel()
	d := ddbitem.New(item{"s": n("1"), "n": s("1"), "f": n("1.5"), "big": n("9223372036854775808"), "b": s("x"), "t": s("x")})
	require.Empty(t, d.String("s"))
	require.Zero(t, d.Int("n"))
	require.Zero(t, d.OptInt("f"))
	require.Zero(t, d.OptInt("big"), "not the largest int64 strconv gives for it")
	require.True(t, d.OptMillis("big").IsZero())
	require.Nil(t, d.OptBinary("b"))
	require.True(t, d.OptMillis("t").IsZero())
	require.True(t, d.OptSeconds("t").IsZero())
	require.Error(t, d.Err())
}

// Nothing to read is not a problem: a nil item has no attributes.
func TestANilItemHasNoAttributes(t *testing.T) {
	t.Parallel()
	d := ddbitem.New(nil)
	require.Empty(t, d.OptString("x"))
	require.Empty(t, d.Names())
	require.NoError(t, d.Err())
	d.String("x")
	require.EqualError(t, d.Err(), "attribute x: missing")
}
