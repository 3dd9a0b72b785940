package projection

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// decoder reads attributes of an item and remembers the first problem.
type decoder struct {
	item map[string]types.AttributeValue
	err  error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("projection: decode item: "+format, args...)
	}
}

// str reads a string attribute; optional ones may be missing.
func (d *decoder) str(name string, optional bool) string {
	av, ok := d.item[name]
	if !ok {
		if !optional {
			d.fail("missing attribute %s", name)
		}
		return ""
	}
	s, ok := av.(*types.AttributeValueMemberS)
	if !ok {
		d.fail("attribute %s is %T, not a string", name, av)
		return ""
	}
	return s.Value
}

// num reads an integer attribute; optional ones may be missing (0).
func (d *decoder) num(name string, optional bool) int64 {
	av, ok := d.item[name]
	if !ok {
		if !optional {
			d.fail("missing attribute %s", name)
		}
		return 0
	}
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		d.fail("attribute %s is %T, not a number", name, av)
		return 0
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		d.fail("attribute %s: %v", name, err)
	}
	return v
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
