package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/fifo"
)

// QueryAPI is the DynamoDB call an Export makes; *dynamodb.Client has it.
type QueryAPI interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ QueryAPI = (*dynamodb.Client)(nil)

// The Articles table's key.
const (
	AttrTenant    = "tenant"     // hash key, S
	AttrArticleID = "article_id" // range key, S
)

// The export's parameters and format.
const (
	// Ext is the extension of an export's candidate: newline-delimited JSON.
	Ext = "ndjson"
	// SpecPageSize is the job spec key of the page size: how many articles
	// one Query reads, and so how often progress is reported.
	SpecPageSize = "page_size"
	// DefaultPageSize is the page size of a spec without SpecPageSize.
	DefaultPageSize = 100
	// MaxPageSize is the largest page size a spec may ask for.
	MaxPageSize = 1000
)

// ErrInvalidSpec is wrapped (under fifo.Permanent) by the error of a job
// whose spec the export cannot run.
var ErrInvalidSpec = errors.New("articles: invalid spec")

// ErrUnexportable is wrapped (under fifo.Permanent) by the error of an
// article the export cannot write: an attribute of a type it does not know,
// or a number that is not a JSON number.
var ErrUnexportable = errors.New("articles: article cannot be exported")

// ErrForeignItem is wrapped (under fifo.Permanent) by the error of a query
// that returned an item of another tenant than the job's. The key condition
// rules that out; the check makes a broken table client, or a wrapper of
// it, fail the job instead of leaking another tenant's article.
var ErrForeignItem = errors.New("articles: query returned an item of another tenant")

// Export is the reference task: it writes the job's tenant's articles as
// NDJSON. It is safe for concurrent use.
type Export struct {
	api   QueryAPI
	table string
}

var _ worker.Task = (*Export)(nil)

// NewExport returns the export of the Articles table named table. It
// panics when api is nil or table is empty: programming errors, found at
// cold start.
func NewExport(api QueryAPI, table string) *Export {
	if api == nil {
		panic("articles: NewExport with a nil DynamoDB client")
	}
	if table == "" {
		panic("articles: NewExport with an empty table name")
	}
	return &Export{api: api, table: table}
}

// Ext implements worker.Task.
func (e *Export) Ext() string { return Ext }

// Run implements worker.Task. It queries the job's tenant's partition in
// article id order, page by page, writes each article as one line of JSON,
// and reports the count so far after every page but the last (the accept
// records the final count in its own write). A spec it cannot run, and an
// article it cannot write, are permanent errors; a failed query is not.
func (e *Export) Run(ctx context.Context, in worker.Input) (worker.Output, error) {
	pageSize, err := pageSize(in.Job.Spec)
	if err != nil {
		return worker.Output{}, fifo.Permanent(err)
	}
	tenant := in.Job.Tenant
	enc := json.NewEncoder(in.Out) // Encode ends each value with a newline: NDJSON
	enc.SetEscapeHTML(false)       // article bodies keep their <, > and &
	var count int64
	var start map[string]types.AttributeValue
	for {
		page, err := e.api.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(e.table),
			KeyConditionExpression:    aws.String("#tenant = :tenant"),
			ExpressionAttributeNames:  map[string]string{"#tenant": AttrTenant},
			ExpressionAttributeValues: map[string]types.AttributeValue{":tenant": &types.AttributeValueMemberS{Value: tenant}},
			Limit:                     aws.Int32(pageSize),
			ExclusiveStartKey:         start,
			// An export includes every article written before it started.
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return worker.Output{}, fmt.Errorf("articles: query %s after %d articles: %w", e.table, count, err)
		}
		for _, item := range page.Items {
			if s, ok := item[AttrTenant].(*types.AttributeValueMemberS); !ok || s.Value != tenant {
				// The other tenant's name stays out of the error: it becomes
				// the job's failure message, which this tenant reads.
				return worker.Output{}, fifo.Permanent(fmt.Errorf("%w (after %d articles)", ErrForeignItem, count))
			}
			obj, err := Object(item)
			if err != nil {
				return worker.Output{}, fifo.Permanent(fmt.Errorf("article %s: %w", articleID(item), err))
			}
			if err := enc.Encode(obj); err != nil {
				return worker.Output{}, fmt.Errorf("articles: write article %s: %w", articleID(item), err)
			}
			count++
		}
		if len(page.LastEvaluatedKey) == 0 {
			return worker.Output{Items: count}, nil
		}
		// Without a filter, a page with a LastEvaluatedKey is never empty.
		if err := in.Progress(ctx, count); err != nil {
			return worker.Output{}, err
		}
		start = page.LastEvaluatedKey
	}
}

// ValidateSpec reports why the export cannot run a job of spec: an error
// wrapping ErrInvalidSpec that names the field, or nil. It is the check Run
// makes, exported so that intake refuses such a spec before it creates a
// job (the wiring hands it over as intake.Config.ValidateSpec): one
// validator for both.
func ValidateSpec(spec map[string]string) error {
	_, err := pageSize(spec)
	return err
}

// pageSize reads SpecPageSize from a job spec.
func pageSize(spec map[string]string) (int32, error) {
	v, ok := spec[SpecPageSize]
	if !ok {
		return DefaultPageSize, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 || n > MaxPageSize {
		return 0, fmt.Errorf("%w: %s %q is not an integer from 1 to %d", ErrInvalidSpec, SpecPageSize, v, MaxPageSize)
	}
	return int32(n), nil
}

func articleID(item map[string]types.AttributeValue) string {
	if s, ok := item[AttrArticleID].(*types.AttributeValueMemberS); ok {
		return strconv.Quote(s.Value)
	}
	return "without an id"
}

// Object returns the JSON form of an article: an object with every
// attribute, the key attributes included. Encoded by encoding/json, its
// members are sorted by name. Attribute values map to JSON as follows:
//
//   - S: a string.
//   - N: a number, with DynamoDB's digits exactly (up to 38 significant
//     digits; never rounded through a float64).
//   - BOOL: true or false. NULL: null.
//   - B: a string, the bytes in standard base64 (as encoding/json writes
//     []byte).
//   - SS, NS, BS: arrays of the same, in the order DynamoDB returns them
//     (a set has no order of its own).
//   - L: an array; M: an object; their elements by these same rules.
//
// Any other type, and a number that is not a JSON number literal, is an
// error wrapping ErrUnexportable.
func Object(item map[string]types.AttributeValue) (map[string]any, error) {
	obj := make(map[string]any, len(item))
	for name, av := range item {
		v, err := value(av)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		obj[name] = v
	}
	return obj, nil
}

func value(av types.AttributeValue) (any, error) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, nil
	case *types.AttributeValueMemberN:
		return number(v.Value)
	case *types.AttributeValueMemberBOOL:
		return v.Value, nil
	case *types.AttributeValueMemberNULL:
		return nil, nil
	case *types.AttributeValueMemberB:
		return v.Value, nil // []byte: base64
	case *types.AttributeValueMemberSS:
		return v.Value, nil
	case *types.AttributeValueMemberNS:
		ns := make([]json.Number, len(v.Value))
		for i, s := range v.Value {
			n, err := number(s)
			if err != nil {
				return nil, err
			}
			ns[i] = n
		}
		return ns, nil
	case *types.AttributeValueMemberBS:
		return v.Value, nil // [][]byte: base64 strings
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			x, err := value(e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			l[i] = x
		}
		return l, nil
	case *types.AttributeValueMemberM:
		return Object(v.Value)
	}
	return nil, fmt.Errorf("%w: attribute value of type %T", ErrUnexportable, av)
}

// jsonNumber is the grammar of a JSON number (RFC 8259, section 6).
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// number checks that s can be written as a JSON number as it is.
func number(s string) (json.Number, error) {
	if !jsonNumber.MatchString(s) {
		return "", fmt.Errorf("%w: number %q is not a JSON number", ErrUnexportable, s)
	}
	return json.Number(s), nil
}
