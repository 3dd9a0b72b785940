package tasks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// backend is an Articles table the suite runs on: the fake, or a table on
// DynamoDB Local (articles_integration_test.go).
type backend struct {
	api   tasks.QueryAPI
	table string
	put   func(t *testing.T, items ...map[string]types.AttributeValue)
}

// run is one export of a tenant's articles, as a worker would call it.
type run struct {
	out      bytes.Buffer
	mu       sync.Mutex
	progress []int64
}

func exportRun(t *testing.T, be backend, tenant string, spec map[string]string) (*run, task.Output, error) {
	t.Helper()
	r := &run{}
	in := task.Input{
		Job:       task.Job{ID: "job-42", Tenant: tenant, Spec: spec, Generation: 1},
		AttemptID: "req-1_msg-1",
		Out:       &r.out,
		Progress: func(_ context.Context, n int64) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.progress = append(r.progress, n)
			return nil
		},
	}
	out, err := newExport(t, be.api, be.table).Run(t.Context(), in)
	return r, out, err
}

// lines returns the NDJSON lines, each decoded.
func (r *run) lines(t *testing.T) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for line := range strings.Lines(r.out.String()) {
		require.True(t, strings.HasSuffix(line, "\n"), "every line ends with a newline")
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var obj map[string]any
		require.NoError(t, dec.Decode(&obj))
		objs = append(objs, obj)
	}
	return objs
}

func ids(objs []map[string]any) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o[tasks.AttrTenant].(string)+"/"+o[tasks.AttrArticleID].(string))
	}
	return out
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func article(tenant, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		tasks.AttrTenant: s(tenant), tasks.AttrArticleID: s(id),
		"title": s("Title " + id), "updated_at": n("1793782800000"),
	}
}

// runSuite holds a backend to the behaviour the export relies on.
func runSuite(t *testing.T, newBackend func(t *testing.T) backend) {
	for name, test := range map[string]func(t *testing.T, be backend){
		"ArticlesInIDOrderPageByPage":      testArticlesInIDOrderPageByPage,
		"TenantsAreIsolated":               testTenantsAreIsolated,
		"ALastFullPageIsFollowedByAnEmpty": testALastFullPageIsFollowedByAnEmptyOne,
		"NoArticles":                       testNoArticles,
		"DefaultPageSize":                  testDefaultPageSize,
		"AttributeTypes":                   testAttributeTypes,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newBackend(t))
		})
	}
}

// Five articles, two per page: three queries, progress after the first
// two pages, every article once, in id order, with its attributes.
func testArticlesInIDOrderPageByPage(t *testing.T, be backend) {
	for _, id := range []string{"a3", "a1", "a5", "a2", "a4"} {
		be.put(t, article("t-1", id))
	}
	r, out, err := exportRun(t, be, "t-1", map[string]string{tasks.SpecPageSize: "2"})
	require.NoError(t, err)
	require.EqualValues(t, 5, out.Items)
	require.Equal(t, []int64{2, 4}, r.progress, "after every page but the last")
	objs := r.lines(t)
	require.Equal(t, []string{"t-1/a1", "t-1/a2", "t-1/a3", "t-1/a4", "t-1/a5"}, ids(objs))
	require.Equal(t, map[string]any{"tenant": "t-1", "article_id": "a1", "title": "Title a1", "updated_at": json.Number("1793782800000")}, objs[0])
}

// A tenant's export holds its articles and no other tenant's: not one
// with the same article id, not one whose tenant starts the same.
func testTenantsAreIsolated(t *testing.T, be backend) {
	be.put(t, article("t-1", "a1"), article("t-1", "a2"), article("t-2", "a1"), article("t-2", "a3"),
		article("t-10", "a1"), article("t", "a1"))
	for tenant, want := range map[string][]string{
		"t-1":  {"t-1/a1", "t-1/a2"},
		"t-2":  {"t-2/a1", "t-2/a3"},
		"t-10": {"t-10/a1"},
		"t-3":  nil,
	} {
		r, out, err := exportRun(t, be, tenant, map[string]string{tasks.SpecPageSize: "1"})
		require.NoError(t, err, tenant)
		require.Equal(t, want, ids(r.lines(t)), tenant)
		require.EqualValues(t, len(want), out.Items, tenant)
	}
}

// DynamoDB returns a LastEvaluatedKey whenever the limit was reached, so
// four articles two per page take three queries, the last one empty: the
// second page's count is reported, the empty page reports nothing.
func testALastFullPageIsFollowedByAnEmptyOne(t *testing.T, be backend) {
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		be.put(t, article("t-1", id))
	}
	r, out, err := exportRun(t, be, "t-1", map[string]string{tasks.SpecPageSize: "2"})
	require.NoError(t, err)
	require.EqualValues(t, 4, out.Items)
	require.Equal(t, []int64{2, 4}, r.progress)
	require.Len(t, r.lines(t), 4)
}

func testNoArticles(t *testing.T, be backend) {
	be.put(t, article("t-2", "a1"))
	r, out, err := exportRun(t, be, "t-1", nil)
	require.NoError(t, err)
	require.Zero(t, out.Items)
	require.Empty(t, r.progress)
	require.Empty(t, r.out.String())
}

// Without page_size a page holds 100 articles: 3 articles are one page,
// with no progress before the accept.
func testDefaultPageSize(t *testing.T, be backend) {
	be.put(t, article("t-1", "a1"), article("t-1", "a2"), article("t-1", "a3"))
	r, out, err := exportRun(t, be, "t-1", map[string]string{"export": "articles"})
	require.NoError(t, err)
	require.EqualValues(t, 3, out.Items)
	require.Empty(t, r.progress)
}

// Every attribute type, written as Object documents; the line is compared
// byte for byte (members sorted, HTML not escaped, numbers exact).
func testAttributeTypes(t *testing.T, be backend) {
	item := article("t-1", "a1")
	item["title"] = s(`Tom & Jerry <3`)
	item["views"] = n("12345678901234567890123456789012345678") // 38 digits: more than a float64 holds
	item["score"] = n("-0.5")
	item["published"] = &types.AttributeValueMemberBOOL{Value: true}
	item["deleted_at"] = &types.AttributeValueMemberNULL{Value: true}
	item["thumb"] = &types.AttributeValueMemberB{Value: []byte{1, 2, 255}}
	item["tags"] = &types.AttributeValueMemberSS{Value: []string{"go"}}
	item["ratings"] = &types.AttributeValueMemberNS{Value: []string{"4"}}
	item["blobs"] = &types.AttributeValueMemberBS{Value: [][]byte{{0}}}
	item["links"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x"), n("1"), &types.AttributeValueMemberNULL{Value: true}}}
	item["author"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"name": s("Ada"), "id": n("7")}}
	be.put(t, item)
	r, _, err := exportRun(t, be, "t-1", nil)
	require.NoError(t, err)
	require.Equal(t, `{"article_id":"a1","author":{"id":7,"name":"Ada"},"blobs":["AA=="],"deleted_at":null,`+
		`"links":["x",1,null],"published":true,"ratings":[4],"score":-0.5,"tags":["go"],"tenant":"t-1",`+
		`"thumb":"AQL/","title":"Tom & Jerry <3","updated_at":1793782800000,`+
		`"views":12345678901234567890123456789012345678}`+"\n", r.out.String())
}

// fakeBackend is the fake table.
func fakeBackend(*testing.T) backend {
	f := newFakeArticles()
	return backend{api: f, table: f.table, put: f.put}
}

func TestExportOnTheFake(t *testing.T) {
	t.Parallel()
	runSuite(t, fakeBackend)
}
