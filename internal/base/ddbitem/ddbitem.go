// Package ddbitem binds the one strict decoder of DynamoDB items
// (internal/base/ddbattr, whose doc states its rules) to items as the SDK
// returns them, for the jobs, quarantine and projection stores.
package ddbitem

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/internal/base/ddbattr"
)

// Error is the first problem of an item: which attribute, what is wrong.
type Error = ddbattr.Error

// Decoder reads one item the SDK returned, or one map nested in it. It is
// not safe for concurrent use.
type Decoder = ddbattr.Decoder[types.AttributeValue]

// New returns a decoder of item; a nil item has no attributes.
func New(item map[string]types.AttributeValue) *Decoder {
	return ddbattr.New(item, &sdkForm)
}

// sdkForm reads the SDK's attribute values, one member type for each
// DynamoDB type.
var sdkForm = ddbattr.Form[types.AttributeValue]{
	S: func(v types.AttributeValue) (string, bool) {
		m, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return "", false
		}
		return m.Value, true
	},
	N: func(v types.AttributeValue) (string, bool) {
		m, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			return "", false
		}
		return m.Value, true
	},
	B: func(v types.AttributeValue) ([]byte, bool) {
		m, ok := v.(*types.AttributeValueMemberB)
		if !ok {
			return nil, false
		}
		return m.Value, true
	},
	M: func(v types.AttributeValue) (map[string]types.AttributeValue, bool) {
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			return nil, false
		}
		return m.Value, true
	},
	TypeName: TypeName,
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
