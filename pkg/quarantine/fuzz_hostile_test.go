package quarantine

import (
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func dedupMessage(dedup string) *events.SQSMessage {
	return &events.SQSMessage{Attributes: map[string]string{"MessageDeduplicationId": dedup}}
}

// FuzzParseCopy: what ParseCopy accepts from a deduplication id, the
// producer's part of a message, is a well-formed identity (an epoch of at
// least 1, a nonce of 32 lower-case hex digits, a sequence key) whose own
// deduplication id, within SQS's 128 characters, parses back to it; and
// every identity the redrive writes parses back to itself.
func FuzzParseCopy(f *testing.F) {
	nonce := strings.Repeat("0123456789abcdef", 2)
	seq := strings.Repeat("0", 19) + "18446744073709551615000"[:21]
	f.Add(Copy{Epoch: 1, Nonce: nonce, Sequence: seq}.DeduplicationID(), int64(1), []byte(nonce[:16]), uint64(1), uint64(2))
	f.Add("fifoworker-redrive.1.."+seq, int64(0), []byte{}, uint64(0), uint64(0))
	f.Add("fifoworker-redrive.+01."+nonce+"."+seq, int64(-1), []byte("x"), uint64(1<<63), uint64(99))
	f.Add("fifoworker-redrive.1."+strings.ToUpper(nonce)+"."+seq, int64(9223372036854775807), []byte(nonce), uint64(0), uint64(1))
	f.Add("job-42/v0", int64(2), []byte{0xff}, uint64(3), uint64(4))
	// The deduplication ids of the samples' messages.
	for _, name := range []string{"sqs-commands-batch.json", "sqs-events-batch.json"} {
		raw, err := os.ReadFile("../../events/" + name)
		require.NoError(f, err)
		var ev events.SQSEvent
		require.NoError(f, json.Unmarshal(raw, &ev))
		for _, m := range ev.Records {
			f.Add(m.Attributes["MessageDeduplicationId"], int64(1), []byte(m.MessageId), uint64(7), uint64(8))
		}
	}
	f.Fuzz(func(t *testing.T, dedup string, epoch int64, nonceBytes []byte, hi, lo uint64) {
		if c, ok := ParseCopy(dedupMessage(dedup)); ok {
			require.GreaterOrEqual(t, c.Epoch, int64(1))
			require.Len(t, c.Nonce, nonceLen)
			_, err := hex.DecodeString(c.Nonce)
			require.NoError(t, err)
			require.Equal(t, strings.ToLower(c.Nonce), c.Nonce)
			key, err := SeqKey(c.Sequence)
			require.NoError(t, err)
			require.Equal(t, key, c.Sequence, "a copy names its message by its sequence key")
			id := c.DeduplicationID()
			require.LessOrEqual(t, len(id), 128, "SQS's limit on a deduplication id")
			again, ok := ParseCopy(dedupMessage(id))
			require.True(t, ok, id)
			require.Equal(t, c, again)
		}

		// The identity the redrive writes for any parked message.
		n := hex.EncodeToString(append(nonceBytes, make([]byte, nonceLen/2)...)[:nonceLen/2])
		number := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
		number.Or(number, new(big.Int).SetUint64(lo))
		key, err := SeqKey(number.String())
		require.NoError(t, err, "every 128-bit sequence number has a key")
		c := Copy{Epoch: epoch, Nonce: n, Sequence: key}
		got, ok := ParseCopy(dedupMessage(c.DeduplicationID()))
		if epoch < 1 {
			require.False(t, ok, "epochs start at 1: %q", c.DeduplicationID())
			return
		}
		require.True(t, ok, c.DeduplicationID())
		require.Equal(t, c, got)
		require.LessOrEqual(t, len(c.DeduplicationID()), 128)
	})
}

// FuzzSeqKey: a sequence key is 40 digits, refused with the package's
// error for anything but 1 to 40 decimal digits; it sorts as the numbers
// do, and SeqNumber gives back the number as SQS writes it.
func FuzzSeqKey(f *testing.F) {
	f.Add("1", "2")
	f.Add("18706036396706013184", "9")
	f.Add("340282366920938463463374607431768211455", "0")
	f.Add("0000000000000000000000000000000000000001", "00")
	f.Add("", "-1")
	f.Add("１２", "1e3")
	f.Add(strings.Repeat("9", 41), " 1")
	f.Fuzz(func(t *testing.T, a, b string) {
		require.Empty(t, SeqNumber(""), "no key, no number")
		ka, errA := SeqKey(a)
		kb, errB := SeqKey(b)
		for _, c := range []struct {
			seq, key string
			err      error
		}{{a, ka, errA}, {b, kb, errB}} {
			if c.err != nil {
				require.True(t, strings.HasPrefix(c.err.Error(), "quarantine: sequence number"), c.err.Error())
				require.Empty(t, c.key)
				continue
			}
			require.Len(t, c.key, seqWidth)
			require.Empty(t, strings.Trim(c.key, "0123456789"))
			number := SeqNumber(c.key)
			want := strings.TrimLeft(c.seq, "0")
			if want == "" {
				want = "0"
			}
			require.Equal(t, want, number)
			again, err := SeqKey(number)
			require.NoError(t, err)
			require.Equal(t, c.key, again)
		}
		if errA != nil || errB != nil {
			return
		}
		na, _ := new(big.Int).SetString(a, 10)
		nb, _ := new(big.Int).SetString(b, 10)
		require.Equal(t, na.Cmp(nb), strings.Compare(ka, kb), "keys sort as the numbers %s and %s", a, b)
	})
}

// FuzzDecodeItems: the quarantine table's items, as DynamoDB returns them,
// decode without a panic; a hold or a message that decodes is encoded
// (holdItem, messageItem) into an item that decodes to it again.
func FuzzDecodeItems(f *testing.F) {
	at := time.UnixMilli(1793782800123).UTC()
	hold := HoldRecord{Queue: "fifoworker-commands.fifo", Group: "job-42", State: StateDraining, Epoch: 2, Parked: 3,
		Cause: "permanent: boom", From: strings.Repeat("0", 39) + "1", Through: strings.Repeat("0", 39) + "3", HeldAt: at, UpdatedAt: at}
	msg := Parked{Queue: "fifoworker-commands.fifo", Group: "job-42", Sequence: strings.Repeat("0", 39) + "2", MessageID: "m-1",
		Body: `{"type":"job.run"}`, BodyMD5: "5e", BodySize: 18, DeduplicationID: "job-42/v0", Nonce: strings.Repeat("ab", 16),
		ReceiveCount: 6, Cause: "c", Status: StatusDone, ParkedAt: at, UpdatedAt: at,
		Attributes: map[string]MessageAttribute{"a": {DataType: "String", StringValue: "v"}, "b": {DataType: "Binary", BinaryValue: []byte{1, 2}}}}
	for _, item := range []map[string]types.AttributeValue{holdItem(&hold, 7), messageItem(&msg)} {
		b, err := json.Marshal(wireItem(item))
		require.NoError(f, err)
		f.Add(string(b))
	}
	f.Add(`{"sk":{"S":"hold"},"state":{"S":"gone"}}`)
	f.Add(`{"sk":{"S":"m#1"},"attributes":{"M":{"x":{"S":"y"}}}}`)
	f.Fuzz(func(t *testing.T, data string) {
		var img map[string]events.DynamoDBAttributeValue
		if json.Unmarshal([]byte(data), &img) != nil {
			return
		}
		item := sdkItem(img)
		if h, err := decodeHold(item); err == nil {
			back, err := decodeHold(holdItem(&h.rec, h.version))
			require.NoError(t, err)
			require.Equal(t, h, back)
		} else {
			require.True(t, strings.HasPrefix(err.Error(), "quarantine: hold record"), err.Error())
		}
		_, known, err := holdFromItem(item) // a refused condition's copy of the hold
		if len(item) == 0 {
			require.False(t, known)
			require.NoError(t, err)
		} else {
			require.Equal(t, err == nil, known)
		}
		p, err := decodeMessage(item)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "quarantine: message item"), err.Error())
			return
		}
		back, err := decodeMessage(messageItem(&p))
		require.NoError(t, err)
		require.Equal(t, normalParked(p), normalParked(back))
	})
}

// normalParked drops the difference between empty and absent attributes,
// which an item cannot keep (an empty map or binary value is not written).
func normalParked(p Parked) Parked {
	if len(p.Attributes) == 0 {
		p.Attributes = nil
	}
	for k, a := range p.Attributes {
		if len(a.BinaryValue) == 0 {
			a.BinaryValue = nil
		}
		p.Attributes[k] = a
	}
	return p
}

// sdkItem converts an image in DynamoDB's JSON (as events decodes it) to
// the SDK's attribute values.
func sdkItem(img map[string]events.DynamoDBAttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(img))
	for k, v := range img {
		out[k] = sdkValue(v)
	}
	return out
}

func sdkValue(v events.DynamoDBAttributeValue) types.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}
	case events.DataTypeMap:
		return &types.AttributeValueMemberM{Value: sdkItem(v.Map())}
	case events.DataTypeList:
		l := make([]types.AttributeValue, len(v.List()))
		for i, e := range v.List() {
			l[i] = sdkValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	}
	return &types.AttributeValueMemberNULL{Value: true}
}

// wireItem is an item in DynamoDB's JSON form, for the seeds.
func wireItem(item map[string]types.AttributeValue) map[string]any {
	out := make(map[string]any, len(item))
	for k, v := range item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			out[k] = map[string]any{"S": v.Value}
		case *types.AttributeValueMemberN:
			out[k] = map[string]any{"N": v.Value}
		case *types.AttributeValueMemberB:
			out[k] = map[string]any{"B": v.Value}
		case *types.AttributeValueMemberM:
			out[k] = map[string]any{"M": wireItem(v.Value)}
		}
	}
	return out
}
