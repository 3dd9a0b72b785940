package ddbattr_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/ddbattr"
	"github.com/fifoworker/fifoworker/internal/base/ddbitem"
)

// reads are every getter, each as a function of a fresh decoder: each
// read is compared alone, since after a problem every read gives the zero
// value.
func reads[V any]() []func(*ddbattr.Decoder[V]) any {
	return []func(*ddbattr.Decoder[V]) any{
		func(d *ddbattr.Decoder[V]) any { return d.Names() },
		func(d *ddbattr.Decoder[V]) any { return d.String("x") }, func(d *ddbattr.Decoder[V]) any { return d.OptString("x") },
		func(d *ddbattr.Decoder[V]) any { return d.Int("x") }, func(d *ddbattr.Decoder[V]) any { return d.OptInt("x") },
		func(d *ddbattr.Decoder[V]) any { return d.Millis("x") }, func(d *ddbattr.Decoder[V]) any { return d.OptMillis("x") },
		func(d *ddbattr.Decoder[V]) any { return d.OptSeconds("x") }, func(d *ddbattr.Decoder[V]) any { return d.OptBinary("x") },
		func(d *ddbattr.Decoder[V]) any { return d.OptStringMap("x") },
		func(d *ddbattr.Decoder[V]) any {
			sub, ok := d.OptMap("x")
			if !ok {
				return nil
			}
			return []any{sub.Names(), sub.String("k"), sub.OptInt("n"), sub.OptStringMap("m")}
		},
		func(d *ddbattr.Decoder[V]) any { return d.String("absent") },
	}
}

// A stream image is read exactly as the SDK's item it shows is: every
// getter on an attribute of every DynamoDB type, nested maps included,
// gives the same value and the same problem (the same type names, a
// number's with its value), so the rules ddbitem's tests hold the SDK's
// form to hold for images.
func TestAnImageReadsAsTheItemItShows(t *testing.T) {
	t.Parallel()
	for name, v := range values() {
		item := map[string]types.AttributeValue{"x": v.sdk}
		image := map[string]events.DynamoDBAttributeValue{"x": v.image}
		sdk, img := reads[types.AttributeValue](), reads[events.DynamoDBAttributeValue]()
		for i := range sdk {
			want, got := ddbitem.New(item), ddbattr.Image(image)
			require.Equal(t, sdk[i](want), img[i](got), "%s, read %d", name, i)
			require.Equal(t, want.Err(), got.Err(), "%s, read %d", name, i)
		}
	}
	want, got := ddbitem.New(nil), ddbattr.Image(nil)
	want.String("x")
	got.String("x")
	require.Equal(t, want.Err(), got.Err(), "no item")
}

// pair is one value in both forms.
type pair struct {
	sdk   types.AttributeValue
	image events.DynamoDBAttributeValue
}

// values are a value of every DynamoDB type in both forms: numbers whole
// and not, maps of strings, of mixed values and empty.
func values() map[string]pair {
	s := func(v string) pair { return pair{&types.AttributeValueMemberS{Value: v}, events.NewStringAttribute(v)} }
	n := func(v string) pair { return pair{&types.AttributeValueMemberN{Value: v}, events.NewNumberAttribute(v)} }
	m := func(kv map[string]pair) pair {
		sdk, image := map[string]types.AttributeValue{}, map[string]events.DynamoDBAttributeValue{}
		for k, v := range kv {
			sdk[k], image[k] = v.sdk, v.image
		}
		return pair{&types.AttributeValueMemberM{Value: sdk}, events.NewMapAttribute(image)}
	}
	return map[string]pair{
		"S": s("job-42"), "empty S": s(""), "N": n("1793782800123"), "negative N": n("-7"), "fractional N": n("1.5"),
		"N beyond int64": n("9223372036854775808"),
		"B":              {&types.AttributeValueMemberB{Value: []byte{1, 2}}, events.NewBinaryAttribute([]byte{1, 2})},
		"BOOL":           {&types.AttributeValueMemberBOOL{Value: true}, events.NewBooleanAttribute(true)},
		"NULL":           {&types.AttributeValueMemberNULL{Value: true}, events.NewNullAttribute()},
		"L": {&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "a"}}},
			events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewStringAttribute("a")})},
		"SS":           {&types.AttributeValueMemberSS{Value: []string{"a"}}, events.NewStringSetAttribute([]string{"a"})},
		"NS":           {&types.AttributeValueMemberNS{Value: []string{"1"}}, events.NewNumberSetAttribute([]string{"1"})},
		"BS":           {&types.AttributeValueMemberBS{Value: [][]byte{{1}}}, events.NewBinarySetAttribute([][]byte{{1}})},
		"M of strings": m(map[string]pair{"a": s("1"), "k": s("v")}),
		"M of mixed":   m(map[string]pair{"k": n("2"), "n": s("x"), "m": m(map[string]pair{"z": n("1")})}),
		"empty M":      m(nil),
	}
}

// The image form's type names are ddbitem's, a number's with its value,
// and a nested problem names its path.
func TestAnImagesProblemNamesTheTypeItHas(t *testing.T) {
	t.Parallel()
	d := ddbattr.Image(map[string]events.DynamoDBAttributeValue{
		"version": events.NewNumberAttribute("3"),
		"outbox": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"payload": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"attempt_id": events.NewNumberAttribute("7")}),
		}),
	})
	out, ok := d.OptMap("outbox")
	require.True(t, ok)
	require.Nil(t, out.OptStringMap("payload"))
	require.Empty(t, d.String("version"), "a later read gives the zero value")
	require.Equal(t, &ddbattr.Error{Attribute: "outbox.payload.attempt_id", Problem: "want S, have N 7"}, d.Err())
	for name, v := range values() {
		sdk, image := ddbitem.TypeName(v.sdk), ddbattr.ImageTypeName(v.image)
		require.Equal(t, sdk, image, name)
	}
}

// After a problem every read gives the zero value, even of an attribute
// that holds what the getter wants, and the first problem stays the
// item's: a decode that reads on after a problem takes nothing from the
// item that might look valid.
func TestAfterAProblemEveryReadGivesTheZeroValue(t *testing.T) {
	t.Parallel()
	d := ddbattr.Image(map[string]events.DynamoDBAttributeValue{
		"bad": events.NewStringAttribute("x"),
		"s":   events.NewStringAttribute("job-42"),
		"n":   events.NewNumberAttribute("7"),
		"b":   events.NewBinaryAttribute([]byte{1}),
		"m":   events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"k": events.NewStringAttribute("v")}),
	})
	require.Equal(t, "job-42", d.String("s"), "before the problem")
	require.Zero(t, d.Int("bad"))
	require.Empty(t, d.String("s"))
	require.Empty(t, d.OptString("s"))
	require.Zero(t, d.Int("n"))
	require.Zero(t, d.OptInt("n"))
	require.Zero(t, d.OptMillis("n"))
	require.Zero(t, d.OptSeconds("n"))
	require.Nil(t, d.OptBinary("b"))
	require.Nil(t, d.OptStringMap("m"))
	sub, ok := d.OptMap("m")
	require.False(t, ok)
	require.Nil(t, sub)
	require.Equal(t, &ddbattr.Error{Attribute: "bad", Problem: "want N, have S"}, d.Err())
}

// A problem in a nested map is the item's: reads of the item after it,
// and of the map, give the zero value.
func TestAProblemInANestedMapStopsTheItemsReads(t *testing.T) {
	t.Parallel()
	d := ddbattr.Image(map[string]events.DynamoDBAttributeValue{
		"s": events.NewStringAttribute("job-42"),
		"outbox": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"version": events.NewStringAttribute("3"), "id": events.NewStringAttribute("job-42/v3"),
		}),
	})
	out, ok := d.OptMap("outbox")
	require.True(t, ok)
	require.Zero(t, out.OptInt("version"))
	require.Empty(t, out.OptString("id"))
	require.Empty(t, d.String("s"))
	require.Equal(t, &ddbattr.Error{Attribute: "outbox.version", Problem: "want N, have S"}, d.Err())
}

// Len counts an item's attributes, and a nested map's; no item has none.
func TestLenCountsTheAttributes(t *testing.T) {
	t.Parallel()
	require.Zero(t, ddbattr.Image(nil).Len())
	require.Zero(t, ddbattr.Image(map[string]events.DynamoDBAttributeValue{}).Len())
	d := ddbattr.Image(map[string]events.DynamoDBAttributeValue{
		"s": events.NewStringAttribute("x"),
		"m": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"a": events.NewStringAttribute("1"), "b": events.NewStringAttribute("2"), "c": events.NewNullAttribute()}),
	})
	require.Equal(t, 2, d.Len())
	m, ok := d.OptMap("m")
	require.True(t, ok)
	require.Equal(t, 3, m.Len())
}
