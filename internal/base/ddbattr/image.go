package ddbattr

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// Image returns a decoder of a stream image as Lambda delivers it
// (events.DynamoDBStreamRecord's NewImage or OldImage); a nil image, the
// missing new image of a deleted item, has no attributes.
func Image(image map[string]events.DynamoDBAttributeValue) *Decoder[events.DynamoDBAttributeValue] {
	return New(image, &imageForm)
}

// imageForm reads aws-lambda-go's attribute values, whose getters panic on
// a value of another type: each is asked only after its type is checked.
var imageForm = Form[events.DynamoDBAttributeValue]{
	S: func(v events.DynamoDBAttributeValue) (string, bool) {
		if v.DataType() != events.DataTypeString {
			return "", false
		}
		return v.String(), true
	},
	N: func(v events.DynamoDBAttributeValue) (string, bool) {
		if v.DataType() != events.DataTypeNumber {
			return "", false
		}
		return v.Number(), true
	},
	B: func(v events.DynamoDBAttributeValue) ([]byte, bool) {
		if v.DataType() != events.DataTypeBinary {
			return nil, false
		}
		return v.Binary(), true
	},
	M: func(v events.DynamoDBAttributeValue) (map[string]events.DynamoDBAttributeValue, bool) {
		if v.DataType() != events.DataTypeMap {
			return nil, false
		}
		return v.Map(), true
	},
	TypeName: ImageTypeName,
}

// ImageTypeName is DynamoDB's name of av's type, with a number's value
// ("S", "N 1.5", "M"): the names ddbitem.TypeName gives the SDK's values.
func ImageTypeName(av events.DynamoDBAttributeValue) string {
	switch av.DataType() {
	case events.DataTypeString:
		return "S"
	case events.DataTypeNumber:
		return "N " + av.Number()
	case events.DataTypeBinary:
		return "B"
	case events.DataTypeBoolean:
		return "BOOL"
	case events.DataTypeNull:
		return "NULL"
	case events.DataTypeMap:
		return "M"
	case events.DataTypeList:
		return "L"
	case events.DataTypeStringSet:
		return "SS"
	case events.DataTypeNumberSet:
		return "NS"
	case events.DataTypeBinarySet:
		return "BS"
	}
	return fmt.Sprintf("data type %d", av.DataType())
}
