package tasks_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/fifoworker/fifoworker/internal/app/tasks"
)

// fakeArticles is an Articles table in memory with DynamoDB's Query
// semantics for what the export asks: an equality key condition on the
// hash key, items in range key order, Limit, ExclusiveStartKey, and a
// LastEvaluatedKey whenever the limit was reached (even if nothing
// follows, as DynamoDB does). The suite holds it to DynamoDB Local's
// behaviour.
type fakeArticles struct {
	table string

	mu    sync.Mutex
	items []map[string]types.AttributeValue
	calls []dynamodb.QueryInput
	err   error // returned by every Query when set
	// extra, when set, is appended to every page: what a broken client
	// (or a wrapper of it) that ignores the key condition returns.
	extra map[string]types.AttributeValue
}

var _ tasks.QueryAPI = (*fakeArticles)(nil)

func newFakeArticles() *fakeArticles { return &fakeArticles{table: "articles-test"} }

func validation(format string, args ...any) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: fmt.Sprintf(format, args...)}
}

func (f *fakeArticles) put(_ *testing.T, items ...map[string]types.AttributeValue) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, it := range items {
		key := func(m map[string]types.AttributeValue) [2]string {
			return [2]string{str(m[tasks.AttrTenant]), str(m[tasks.AttrArticleID])}
		}
		f.items = slices.DeleteFunc(f.items, func(old map[string]types.AttributeValue) bool { return key(old) == key(it) })
		f.items = append(f.items, maps.Clone(it))
	}
}

func str(av types.AttributeValue) string {
	if s, ok := av.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func (f *fakeArticles) Query(ctx context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, *in)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.err != nil {
		return nil, f.err
	}
	if aws.ToString(in.TableName) != f.table {
		return nil, &types.ResourceNotFoundException{Message: aws.String("fakeArticles: no table " + aws.ToString(in.TableName))}
	}
	tenant, err := hashKeyCondition(in)
	if err != nil {
		return nil, err
	}
	limit := int(aws.ToInt32(in.Limit))
	if in.Limit != nil && limit < 1 {
		return nil, validation("Limit must be at least 1")
	}
	after := ""
	if esk := in.ExclusiveStartKey; esk != nil {
		if str(esk[tasks.AttrTenant]) != tenant || len(esk) != 2 {
			return nil, validation("the provided starting key is invalid")
		}
		after = str(esk[tasks.AttrArticleID])
	}
	var page []map[string]types.AttributeValue
	for _, it := range f.items {
		if str(it[tasks.AttrTenant]) == tenant && (in.ExclusiveStartKey == nil || str(it[tasks.AttrArticleID]) > after) {
			page = append(page, it)
		}
	}
	slices.SortFunc(page, func(a, b map[string]types.AttributeValue) int {
		return cmp.Compare(str(a[tasks.AttrArticleID]), str(b[tasks.AttrArticleID]))
	})
	out := &dynamodb.QueryOutput{}
	if limit > 0 && len(page) >= limit {
		page = page[:limit]
		last := page[len(page)-1]
		out.LastEvaluatedKey = map[string]types.AttributeValue{
			tasks.AttrTenant: last[tasks.AttrTenant], tasks.AttrArticleID: last[tasks.AttrArticleID],
		}
	}
	for _, it := range page {
		out.Items = append(out.Items, maps.Clone(it))
	}
	if f.extra != nil {
		out.Items = append(out.Items, maps.Clone(f.extra))
	}
	out.Count = int32(len(out.Items))
	return out, nil
}

// hashKeyCondition reads "<name> = <value>" on the hash key and returns
// the value; nothing else is a valid condition here.
func hashKeyCondition(in *dynamodb.QueryInput) (string, error) {
	left, right, ok := strings.Cut(aws.ToString(in.KeyConditionExpression), " = ")
	if !ok {
		return "", validation("fakeArticles supports only an equality on the hash key, got %q", aws.ToString(in.KeyConditionExpression))
	}
	if strings.HasPrefix(left, "#") {
		left = in.ExpressionAttributeNames[left]
	}
	if left != tasks.AttrTenant {
		return "", validation("the key condition is on %q, not the hash key", left)
	}
	v, ok := in.ExpressionAttributeValues[right].(*types.AttributeValueMemberS)
	if !ok {
		return "", validation("no string value %s", right)
	}
	return v.Value, nil
}

func (f *fakeArticles) queries() []dynamodb.QueryInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}
