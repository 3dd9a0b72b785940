package projection

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// FuzzDecodeItems: the Views and Totals tables' items decode without a
// panic, refused with the package's decoding error; a view that decodes is
// written back by the projector's own update (viewUpdate, its SET applied
// as DynamoDB applies it) into an item that decodes to the same view; no
// cursor item is the zero cursor.
func FuzzDecodeItems(f *testing.F) {
	for _, seed := range []string{
		`{"job_id":{"S":"job-42"},"tenant":{"S":"t-1"},"status":{"S":"completed"},"generation":{"N":"2"},"version":{"N":"3"},"progress":{"N":"120"},"updated_at":{"N":"1793782950000"},"result_key":{"S":"candidates/job-42/g0000000002/a.ndjson"},"result_size":{"N":"2048"}}`,
		`{"job_id":{"S":"job-42"},"tenant":{"S":"t-1"},"status":{"S":"failed"},"generation":{"N":"1"},"version":{"N":"2"},"progress":{"N":"0"},"error_code":{"S":"task_failed"}}`,
		`{"tenant":{"S":"t-1"},"key":{"S":"cursor#job-42"},"version":{"N":"3"},"progress":{"N":"120"},"status":{"S":"completed"}}`,
		`{"version":{"N":"1e3"}}`, `{"updated_at":{"S":"now"}}`, `{}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var img map[string]events.DynamoDBAttributeValue
		if json.Unmarshal([]byte(data), &img) != nil {
			return
		}
		item := sdkItem(img)
		if c, err := decodeCursor(item); err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "projection: decode item"), err.Error())
		} else if len(item) == 0 {
			require.Equal(t, Cursor{}, c)
		}
		v, err := decodeView(item)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "projection: decode item"), err.Error())
			return
		}
		u := viewUpdate("Views", &v, viewRecover)
		written := map[string]types.AttributeValue{}
		for k, av := range u.key {
			written[k] = av
		}
		for placeholder, av := range u.values {
			name, ok := u.names["#"+strings.TrimPrefix(placeholder, ":")]
			require.True(t, ok, "value %s has a name", placeholder)
			written[name] = av
		}
		back, err := decodeView(written)
		require.NoError(t, err)
		require.Equal(t, v, back)
	})
}

// sdkItem converts an image in DynamoDB's JSON (as events decodes it) to
// the SDK's attribute values.
func sdkItem(img map[string]events.DynamoDBAttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(img))
	for k, v := range img {
		switch v.DataType() {
		case events.DataTypeString:
			out[k] = &types.AttributeValueMemberS{Value: v.String()}
		case events.DataTypeNumber:
			out[k] = &types.AttributeValueMemberN{Value: v.Number()}
		case events.DataTypeBinary:
			out[k] = &types.AttributeValueMemberB{Value: v.Binary()}
		case events.DataTypeBoolean:
			out[k] = &types.AttributeValueMemberBOOL{Value: v.Boolean()}
		case events.DataTypeMap:
			out[k] = &types.AttributeValueMemberM{Value: sdkItem(v.Map())}
		case events.DataTypeStringSet:
			out[k] = &types.AttributeValueMemberSS{Value: v.StringSet()}
		default:
			out[k] = &types.AttributeValueMemberNULL{Value: true}
		}
	}
	return out
}
