package tasks_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/task"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Every query reads one page of the job's tenant's partition, strongly
// consistent, continuing where the last page ended.
func TestExportQueriesOnePartitionPageByPage(t *testing.T) {
	t.Parallel()
	f := newFakeArticles()
	be := backend{api: f, table: f.table, put: f.put}
	be.put(t, article("t-1", "a1"), article("t-1", "a2"), article("t-1", "a3"))
	_, _, err := exportRun(t, be, "t-1", map[string]string{tasks.SpecPageSize: "2"})
	require.NoError(t, err)
	qs := f.queries()
	require.Len(t, qs, 2)
	for i, q := range qs {
		require.Equal(t, f.table, aws.ToString(q.TableName))
		require.Equal(t, "#tenant = :tenant", aws.ToString(q.KeyConditionExpression))
		require.Equal(t, map[string]string{"#tenant": "tenant"}, q.ExpressionAttributeNames)
		require.Equal(t, map[string]types.AttributeValue{":tenant": s("t-1")}, q.ExpressionAttributeValues)
		require.EqualValues(t, 2, aws.ToInt32(q.Limit))
		require.True(t, aws.ToBool(q.ConsistentRead), "query %d", i)
		require.Empty(t, q.FilterExpression, "isolation is the key condition's, not a filter's")
	}
	require.Nil(t, qs[0].ExclusiveStartKey)
	require.Equal(t, map[string]types.AttributeValue{"tenant": s("t-1"), "article_id": s("a2")}, qs[1].ExclusiveStartKey)
}

func TestExportPageSizeBounds(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"1", "1000", "250"} {
		f := newFakeArticles()
		_, _, err := exportRun(t, backend{api: f, table: f.table, put: f.put}, "t-1", map[string]string{tasks.SpecPageSize: ok})
		require.NoError(t, err, ok)
		require.Equal(t, ok, strconv.Itoa(int(aws.ToInt32(f.queries()[0].Limit))), ok)
	}
	for _, bad := range []string{"0", "1001", "-5", "", "abc", "1.5", " 10", "10 ", "99999999999"} {
		f := newFakeArticles()
		_, _, err := exportRun(t, backend{api: f, table: f.table, put: f.put}, "t-1", map[string]string{tasks.SpecPageSize: bad})
		require.True(t, fifo.IsPermanent(err), "%q: got %v", bad, err)
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, bad)
		require.Empty(t, f.queries(), "%q: nothing queried", bad)
	}
}

// A failed query is retried with the command; it is not permanent.
func TestExportQueryErrorIsRetryable(t *testing.T) {
	t.Parallel()
	f := newFakeArticles()
	f.err = &types.ProvisionedThroughputExceededException{Message: aws.String("injected")}
	_, _, err := exportRun(t, backend{api: f, table: f.table, put: f.put}, "t-1", nil)
	var throttled *types.ProvisionedThroughputExceededException
	require.ErrorAs(t, err, &throttled)
	require.False(t, fifo.IsPermanent(err))
}

// An item of another tenant from a broken client fails the job, and the
// failure does not name the other tenant (the failure message is this
// tenant's to read).
func TestExportRefusesAnotherTenantsItem(t *testing.T) {
	t.Parallel()
	f := newFakeArticles()
	f.put(t, article("t-1", "a1"))
	f.extra = article("t-secret", "z9")
	r, _, err := exportRun(t, backend{api: f, table: f.table, put: f.put}, "t-1", nil)
	require.True(t, fifo.IsPermanent(err), "got %v", err)
	require.ErrorIs(t, err, tasks.ErrForeignItem)
	require.NotContains(t, err.Error(), "t-secret")
	require.NotContains(t, r.out.String(), "t-secret")
	// Nor an item without a tenant.
	f.extra = map[string]types.AttributeValue{"article_id": s("z9")}
	_, _, err = exportRun(t, backend{api: f, table: f.table, put: f.put}, "t-1", nil)
	require.ErrorIs(t, err, tasks.ErrForeignItem)
}

// An error from Progress (the attempt lost the job) stops the export.
func TestExportStopsWhenProgressFails(t *testing.T) {
	t.Parallel()
	f := newFakeArticles()
	for _, id := range []string{"a1", "a2", "a3"} {
		f.put(t, article("t-1", id))
	}
	fenced := errors.New("injected: fenced")
	in := task.Input{
		Job:      task.Job{ID: "job-42", Tenant: "t-1", Spec: map[string]string{tasks.SpecPageSize: "1"}},
		Out:      io.Discard,
		Progress: func(context.Context, int64) error { return fenced },
	}
	_, err := newExport(t, f, f.table).Run(t.Context(), in)
	require.ErrorIs(t, err, fenced)
	require.Len(t, f.queries(), 1, "no page after the refusal")
}

func TestObjectRefusesWhatJSONCannotCarry(t *testing.T) {
	t.Parallel()
	for name, av := range map[string]types.AttributeValue{
		"unknown type":         &types.UnknownUnionMember{Tag: "X"},
		"number with a plus":   n("+1"),
		"number with a dot":    n(".5"),
		"not a number":         n("NaN"),
		"leading zero":         n("01"),
		"bad number in a set":  &types.AttributeValueMemberNS{Value: []string{"1", "x"}},
		"bad number in a list": &types.AttributeValueMemberL{Value: []types.AttributeValue{n("1e")}},
		"bad number in a map":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": n("")}},
		"unknown type nested":  &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.UnknownUnionMember{Tag: "Y"}}},
	} {
		item := article("t-1", "a1")
		item["x"] = av
		_, err := tasks.Object(item)
		require.ErrorIs(t, err, tasks.ErrUnexportable, name)
		// Through the export, the job fails.
		f := newFakeArticles()
		f.put(t, item)
		_, _, err = exportRun(t, backend{api: f, table: f.table, put: f.put}, "t-1", nil)
		require.True(t, fifo.IsPermanent(err), name)
	}
	for _, ok := range []string{"0", "-0", "1e5", "1E+5", "-1.25e-3", "100"} {
		_, err := tasks.Object(map[string]types.AttributeValue{"x": n(ok)})
		require.NoError(t, err, ok)
	}
}

// NewExport refuses each invalid configuration with ErrInvalidConfig, the
// field named in the message.
func TestNewExportRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	for field, cfg := range map[string]tasks.Config{
		"Articles":      {ArticlesTable: "articles"},
		"ArticlesTable": {Articles: newFakeArticles()},
	} {
		e, err := tasks.NewExport(cfg)
		require.ErrorIs(t, err, tasks.ErrInvalidConfig, field)
		require.ErrorContains(t, err, field)
		require.Nil(t, e, field)
	}
	require.Equal(t, "ndjson", newExport(t, newFakeArticles(), "articles").Ext(task.Job{ID: "job-42"}))
}

// newExport is NewExport, which cannot fail on a test's configuration.
func newExport(t testing.TB, api tasks.QueryAPI, table string) *tasks.Export {
	t.Helper()
	e, err := tasks.NewExport(tasks.Config{Articles: api, ArticlesTable: table})
	require.NoError(t, err)
	return e
}
