package tasks

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/pkg/fifo"
)

// QueryAPI is the DynamoDB call the tasks that read the Articles table
// make; *dynamodb.Client has it.
type QueryAPI interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ QueryAPI = (*dynamodb.Client)(nil)

// The Articles table's key.
const (
	AttrTenant    = "tenant"     // hash key, S
	AttrArticleID = "article_id" // range key, S
)

// The spec key of every task that reads the Articles table.
const (
	// SpecPageSize is the job spec key of the page size: how many articles
	// one Query reads, and so how often progress is reported.
	SpecPageSize = "page_size"
	// DefaultPageSize is the page size of a spec without SpecPageSize.
	DefaultPageSize = 100
	// MaxPageSize is the largest page size a spec may ask for.
	MaxPageSize = 1000
)

// ErrInvalidSpec is wrapped by a task's ValidateSpec error, and (under
// fifo.Permanent) by the error of a job whose spec its task cannot run.
var ErrInvalidSpec = errors.New("tasks: invalid spec")

// ErrForeignItem is wrapped (under fifo.Permanent) by the error of a query
// that returned an item of another tenant than the job's. The key condition
// rules that out; the check makes a broken table client, or a wrapper of
// it, fail the job instead of leaking another tenant's article.
var ErrForeignItem = errors.New("tasks: query returned an item of another tenant")

// articles reads one Articles table.
type articles struct {
	api   QueryAPI
	table string
}

// each calls do with each of tenant's articles, in article id order, page
// by page (pageSize items a Query, strongly consistent, so that a job reads
// every article written before it started), and returns how many it read.
// After every page but the last it reports the count so far (progress):
// the accept records the final count in its own write. A failed query is
// a retryable error; an item of another tenant, a permanent one; do's
// error and progress's are returned as they are.
func (a articles) each(ctx context.Context, tenant string, pageSize int32, progress func(context.Context, int64) error,
	do func(item map[string]types.AttributeValue) error,
) (int64, error) {
	var count int64
	var start map[string]types.AttributeValue
	for {
		page, err := a.api.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(a.table),
			KeyConditionExpression:    aws.String("#tenant = :tenant"),
			ExpressionAttributeNames:  map[string]string{"#tenant": AttrTenant},
			ExpressionAttributeValues: map[string]types.AttributeValue{":tenant": &types.AttributeValueMemberS{Value: tenant}},
			Limit:                     aws.Int32(pageSize),
			ExclusiveStartKey:         start,
			ConsistentRead:            aws.Bool(true),
		})
		if err != nil {
			return count, fmt.Errorf("tasks: query %s after %d articles: %w", a.table, count, err)
		}
		for _, item := range page.Items {
			if s, ok := item[AttrTenant].(*types.AttributeValueMemberS); !ok || s.Value != tenant {
				// The other tenant's name stays out of the error: it becomes
				// the job's failure message, which this tenant reads.
				return count, fifo.Permanent(fmt.Errorf("%w (after %d articles)", ErrForeignItem, count))
			}
			if err := do(item); err != nil {
				return count, err
			}
			count++
		}
		if len(page.LastEvaluatedKey) == 0 {
			return count, nil
		}
		// Without a filter, a page with a LastEvaluatedKey is never empty.
		if err := progress(ctx, count); err != nil {
			return count, err
		}
		start = page.LastEvaluatedKey
	}
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

// articleID is the quoted id of an article, for an error message.
func articleID(item map[string]types.AttributeValue) string {
	if s, ok := item[AttrArticleID].(*types.AttributeValueMemberS); ok {
		return strconv.Quote(s.Value)
	}
	return "without an id"
}
