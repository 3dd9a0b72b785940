package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// fuzzImageSeeds are the stream images of ../../events/dynamodb-jobs-stream.json,
// as Lambda delivers them (DynamoDB's JSON), and the item of a job that
// sets every attribute.
func fuzzImageSeeds(f *testing.F) {
	f.Helper()
	raw, err := os.ReadFile("../../events/dynamodb-jobs-stream.json")
	require.NoError(f, err)
	var ev struct {
		Records []struct {
			Dynamodb struct {
				NewImage, OldImage json.RawMessage
			} `json:"dynamodb"`
		} `json:"Records"`
	}
	require.NoError(f, json.Unmarshal(raw, &ev))
	for _, r := range ev.Records {
		for _, img := range []json.RawMessage{r.Dynamodb.NewImage, r.Dynamodb.OldImage} {
			if len(img) > 0 {
				f.Add(string(img))
			}
		}
	}
	full := Job{
		ID: "job-42", IntentID: "export-intent-7", Tenant: "t-1", Status: StatusFailed, Generation: 2, Version: 4,
		LeaseOwner: "attempt-b", LeaseExpiresAt: time.UnixMilli(1793782980000).UTC(),
		Result:   Result{Key: "candidates/job-42/g0000000002/attempt-b.json", SHA256: strings.Repeat("5e", 32), Size: 2048},
		Progress: 120, Spec: map[string]string{"source": "articles"},
		Outbox:    Message{ID: "job-42/v4", Type: EventFailed, Version: 4, Payload: map[string]string{"reason": "r"}},
		Error:     Failure{Code: "task_failed", Message: "boom"},
		CreatedAt: time.UnixMilli(1793782800000).UTC(), UpdatedAt: time.UnixMilli(1793782950000).UTC(),
		ExpiresAt: time.Unix(1796374950, 0).UTC(),
	}
	b, err := json.Marshal(itemJSON(jobItem(&full, LiveShards)))
	require.NoError(f, err)
	f.Add(string(b))
	f.Add(`{}`)
	f.Add(`{"job_id":{"S":"job-1"},"status":{"S":"pending"},"version":{"N":"1e3"}}`)
	f.Add(`{"job_id":{"S":"job-1"},"status":{"S":"running"},"outbox":{"M":{"payload":{"M":{"k":{"NULL":true}}}}}}`)
}

// image decodes fuzz input as a stream image; ok is false for input that is
// not one (events' own decoder refuses it, before ours runs).
func image(data string) (map[string]events.DynamoDBAttributeValue, bool) {
	var img map[string]events.DynamoDBAttributeValue
	if err := json.Unmarshal([]byte(data), &img); err != nil {
		return nil, false
	}
	return img, true
}

// FuzzFromStreamImage: any image Lambda could deliver decodes without a
// panic, exactly as FromItem decodes the item it shows; an error names the
// package and is ErrNotJob only for an item without a job's status or id;
// a job decoded has an id and a known status.
func FuzzFromStreamImage(f *testing.F) {
	fuzzImageSeeds(f)
	f.Fuzz(func(t *testing.T, data string) {
		img, ok := image(data)
		if !ok {
			return
		}
		j, err := FromStreamImage(img)
		item, convErr := streamItem(img, "")
		if convErr != nil {
			require.EqualError(t, err, convErr.Error())
		} else {
			j2, err2 := FromItem(item)
			require.Equal(t, j2, j)
			require.Equal(t, err2, err)
		}
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "jobs: "), "an error names the package: %v", err)
			if errors.Is(err, ErrNotJob) {
				require.True(t, j.Status == "" || j.ID == "", "ErrNotJob for a job %+v", j)
			}
			return
		}
		require.NotEmpty(t, j.ID)
		require.Contains(t, []Status{StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled}, j.Status)
	})
}

// FuzzFromItem: an item that decodes survives the encoder: FromItem of
// jobItem of the job is the job again, and encoding that gives the same
// item. An item that does not decode fails with an error, never a panic.
func FuzzFromItem(f *testing.F) {
	fuzzImageSeeds(f)
	f.Fuzz(func(t *testing.T, data string) {
		img, ok := image(data)
		if !ok {
			return
		}
		item, err := streamItem(img, "")
		if err != nil {
			return
		}
		j, err := FromItem(item)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "jobs: "), "an error names the package: %v", err)
			return
		}
		encoded := jobItem(&j, LiveShards)
		back, err := FromItem(encoded)
		require.NoError(t, err, "the item of a decoded job decodes")
		require.Equal(t, j, back, "round trip through the encoder")
		require.Equal(t, itemJSON(encoded), itemJSON(jobItem(&back, LiveShards)), "the encoding is stable")
	})
}

// itemJSON is an item in DynamoDB's JSON form, comparable and printable.
func itemJSON(item map[string]types.AttributeValue) map[string]any {
	out := make(map[string]any, len(item))
	for k, v := range item {
		out[k] = valueJSON(v)
	}
	return out
}

func valueJSON(av types.AttributeValue) any {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": itemJSON(v.Value)}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": v.Value}
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			l[i] = valueJSON(e)
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *types.AttributeValueMemberBS:
		return map[string]any{"BS": v.Value}
	}
	return nil
}

// streamItem is the item, as the SDK would return it, that a stream image
// (or a map within one, at path) shows: the reference FromItem is held to
// by the fuzz tests, written apart from the decoder's own conversion
// (ddbitem.Image, the other way).
func streamItem(image map[string]events.DynamoDBAttributeValue, path string) (map[string]types.AttributeValue, error) {
	if image == nil {
		return nil, nil
	}
	item := make(map[string]types.AttributeValue, len(image))
	for name, av := range image {
		v, err := streamValue(av, path+name)
		if err != nil {
			return nil, err
		}
		item[name] = v
	}
	return item, nil
}

// streamValue converts the attribute value at path, of any of DynamoDB's
// types, to the SDK's.
func streamValue(av events.DynamoDBAttributeValue, path string) (types.AttributeValue, error) {
	switch av.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: av.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: av.Number()}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: av.Binary()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: av.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: av.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: av.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: av.BinarySet()}, nil
	case events.DataTypeMap:
		m, err := streamItem(av.Map(), path+".")
		if err != nil {
			return nil, err
		}
		if m == nil {
			m = map[string]types.AttributeValue{}
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case events.DataTypeList:
		list := make([]types.AttributeValue, 0, len(av.List()))
		for i, e := range av.List() {
			v, err := streamValue(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return &types.AttributeValueMemberL{Value: list}, nil
	}
	return nil, fmt.Errorf("jobs: attribute %s: unknown DynamoDB data type %d", path, av.DataType())
}
