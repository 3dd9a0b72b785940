package tasks_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// pagesAPI answers every Query with the same full page, pages times over:
// the table costs nothing, so the benchmark measures the export itself.
type pagesAPI struct {
	page  []map[string]types.AttributeValue
	pages int
	sent  int
}

func (p *pagesAPI) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	p.sent++
	out := &dynamodb.QueryOutput{Items: p.page}
	if p.sent < p.pages {
		out.LastEvaluatedKey = p.page[len(p.page)-1]
	}
	return out, nil
}

// countingWriter counts what the export writes, as the candidate's spool
// would receive it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }

// BenchmarkExport is the reference task's own cost per byte of candidate,
// with the table answering at once: articles of about 1 KiB of JSON (a
// title, an 800-byte body, a number and a set of tags), pages of the
// largest size. Its MB/s on one core, scaled by the CPU share of the
// worker's memory setting, bounds what one invocation can export, which
// is what template.yaml's MaxCandidateBytes default is sized from.
func BenchmarkExport(b *testing.B) {
	page := make([]map[string]types.AttributeValue, tasks.MaxPageSize)
	for i := range page {
		page[i] = map[string]types.AttributeValue{
			tasks.AttrTenant:    s("t-1"),
			tasks.AttrArticleID: s(fmt.Sprintf("a-%06d", i)),
			"title":             s(fmt.Sprintf("Article %d of t-1, a title of ordinary length", i)),
			"body":              s(strings.Repeat("lorem ipsum dolor sit amet, consectetur ", 20)),
			"words":             n("812"),
			"tags":              &types.AttributeValueMemberSS{Value: []string{"news", "europe", "economy"}},
		}
	}
	const pages = 10
	var written int64
	for b.Loop() {
		out := &countingWriter{}
		export := newExport(b, &pagesAPI{page: page, pages: pages}, "articles-bench")
		_, err := export.Run(context.Background(), task.Input{
			Job: task.Job{ID: "job-42", Tenant: "t-1", Spec: map[string]string{tasks.SpecPageSize: fmt.Sprint(tasks.MaxPageSize)}},
			Out: io.Writer(out), Progress: func(context.Context, int64) error { return nil },
		})
		if err != nil {
			b.Fatal(err)
		}
		written = out.n
	}
	b.SetBytes(written)
	b.ReportMetric(float64(written)/float64(pages*tasks.MaxPageSize), "B/article")
}
