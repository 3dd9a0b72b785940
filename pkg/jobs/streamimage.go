package jobs

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// FromStreamImage decodes an image of a Jobs table stream record, as Lambda
// delivers it (events.DynamoDBStreamRecord's NewImage or OldImage), into a
// Job. It converts the image to SDK attribute values and decodes them with
// FromItem, so an image and the item it shows decode alike, with the same
// errors: a record of an intent marker, or a missing image, is ErrNotJob.
func FromStreamImage(image map[string]events.DynamoDBAttributeValue) (Job, error) {
	item, err := streamItem(image, "")
	if err != nil {
		return Job{}, err
	}
	return FromItem(item)
}

// streamItem converts a stream image, or a map within one at path, to SDK
// attribute values.
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
