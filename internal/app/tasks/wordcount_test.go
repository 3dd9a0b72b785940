package tasks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// words maps each article id of r to its count.
func words(r tasks.WordCountResult) map[string]int64 {
	m := map[string]int64{}
	for _, a := range r.Articles {
		m[a.ArticleID] = a.Words
	}
	return m
}

// decodeWordCount decodes a result strictly: one JSON object of the
// documented shape, nothing after it.
func decodeWordCount(t *testing.T, raw []byte) tasks.WordCountResult {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var r tasks.WordCountResult
	require.NoError(t, dec.Decode(&r), "%s", raw)
	_, err := dec.Token()
	require.ErrorIs(t, err, io.EOF, "one JSON value")
	return r
}

func newWordCount(t testing.TB, api tasks.QueryAPI) *tasks.WordCount {
	t.Helper()
	w, err := tasks.NewWordCount(tasks.Config{Articles: api, ArticlesTable: "articles-test"})
	require.NoError(t, err)
	return w
}

// countRun runs the word count of tenant's articles on f, as a worker
// would, and returns what it wrote and the progress it reported.
func countRun(t *testing.T, f *fakeArticles, tenant string, spec map[string]string) ([]byte, []int64, task.Output, error) {
	t.Helper()
	var out bytes.Buffer
	var progress []int64
	res, err := newWordCount(t, f).Run(t.Context(), task.Input{
		Job: task.Job{ID: "job-42", Tenant: tenant, Spec: spec, Generation: 1}, AttemptID: "req-1_msg-1", Out: &out,
		Progress: func(_ context.Context, n int64) error { progress = append(progress, n); return nil },
	})
	return out.Bytes(), progress, res, err
}

// text is an article of tenant with the given title and body.
func text(tenant, id, title, body string) map[string]types.AttributeValue {
	a := map[string]types.AttributeValue{tasks.AttrTenant: s(tenant), tasks.AttrArticleID: s(id)}
	if title != "" {
		a["title"] = s(title)
	}
	if body != "" {
		a["body"] = s(body)
	}
	return a
}

// Each article's words in its title and body, in article id order, and
// the totals; progress after every page but the last; the tenant's
// articles only.
func TestWordCountCountsEachArticleAndTheTotal(t *testing.T) {
	t.Parallel()
	f := newFakeArticles()
	f.put(t,
		text("t-1", "a3", "Three", "one two three"),
		text("t-1", "a1", "The first article", "It has a body of eight words, no more."),
		text("t-1", "a2", "", ""),
		text("t-2", "a1", "Another tenant's", "never counted"),
	)
	raw, progress, out, err := countRun(t, f, "t-1", map[string]string{tasks.SpecPageSize: "2"})
	require.NoError(t, err)
	require.EqualValues(t, 3, out.Items)
	require.Equal(t, []int64{2}, progress)
	r := decodeWordCount(t, raw)
	require.Equal(t, "t-1", r.Tenant)
	require.Equal(t, []string{"title", "body"}, r.Fields)
	require.Len(t, r.Articles, 3)
	require.Equal(t, []string{"a1", "a2", "a3"}, []string{r.Articles[0].ArticleID, r.Articles[1].ArticleID, r.Articles[2].ArticleID})
	require.Equal(t, map[string]int64{"a1": 3 + 9, "a2": 0, "a3": 1 + 3}, words(r))
	require.EqualValues(t, 3, r.Total.Articles)
	require.EqualValues(t, 16, r.Total.Words)
	require.Equal(t, "{\"tenant\":\"t-1\",\"fields\":[\"title\",\"body\"],\"articles\":[\n"+
		"{\"article_id\":\"a1\",\"words\":12},\n{\"article_id\":\"a2\",\"words\":0},\n{\"article_id\":\"a3\",\"words\":4}\n"+
		"],\"total\":{\"articles\":3,\"words\":16}}\n", string(raw), "the documented layout: one article a line")
}

// A word is a run of characters between spaces (any Unicode space) that
// holds a letter or a digit: punctuation alone is no word, and scripts
// written without spaces count a run as one word.
func TestWordCountWhatAWordIs(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]int64{
		"":                            0,
		"   \t\n  ":                   0,
		"word":                        1,
		"Hello, world!":               2,
		"— ... -- !!":                 0,
		"don't stop-and-go 3.14 e.g.": 4,
		"naïve café Ελληνικά кириллица": 4,
		"e\u0301te\u0301":                1, // combining accents
		"one\u00a0two\u2003three\u3000四": 4, // no-break, em and ideographic spaces
		"日本語のテキスト":                       1,
		"🙂 🎉":                            0, // symbols, no letter
		"ok🙂":                            1,
		"a\tb\nc\r\nd\ve\ff":             6,
		"\xff\xfe":                       0, // not UTF-8: no letter
		"ab\xffcd":                       1,
		"٣ ١٢":                           2, // Arabic-Indic digits
		"Ⅻ ½ x²":                         3, // numbers that are not digits
		"\u200b":                         0, // zero-width space: a format character, no letter
	} {
		f := newFakeArticles()
		f.put(t, text("t-1", "a1", "", body))
		raw, _, _, err := countRun(t, f, "t-1", nil)
		require.NoError(t, err, "%q", body)
		require.Equal(t, map[string]int64{"a1": want}, words(decodeWordCount(t, raw)), "%q", body)
	}
}

// An empty tenant's count is a valid result of no articles; a huge article
// (far past DynamoDB's 400 KB item) is counted exactly.
func TestWordCountEmptyAndHugeArticles(t *testing.T) {
	t.Parallel()
	f := newFakeArticles()
	raw, progress, out, err := countRun(t, f, "t-1", nil)
	require.NoError(t, err)
	require.Zero(t, out.Items)
	require.Empty(t, progress)
	r := decodeWordCount(t, raw)
	require.Empty(t, r.Articles)
	require.Zero(t, r.Total.Words)

	const n = 1 << 20
	f.put(t,
		text("t-1", "many", "", strings.Repeat("word ", n)),          // 5 MiB, a million words
		text("t-1", "one", "", strings.Repeat("x", 8<<20)),           // one word of 8 MiB
		text("t-1", "wide", "", strings.Repeat("日本 ", n/4)+"\u3000"), // multi-byte words
	)
	raw, _, out, err = countRun(t, f, "t-1", nil)
	require.NoError(t, err)
	require.EqualValues(t, 3, out.Items)
	r = decodeWordCount(t, raw)
	require.Equal(t, map[string]int64{"many": n, "one": 1, "wide": n / 4}, words(r))
	require.EqualValues(t, n+1+n/4, r.Total.Words)
}

// failAfter is a result that takes n bytes, then refuses every write.
type failAfter struct {
	n   int
	err error
}

func (f *failAfter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		w := f.n
		f.n = 0
		return w, f.err
	}
	f.n -= len(b)
	return len(b), nil
}

// A refused write ends the count at once with the writer's error as it
// is, not permanent: the worker decides (a write refused for the result's
// size fails the job for good, any other is retried). Wherever the write
// is refused: in the header, an article, or the total.
func TestWordCountPassesOnAWriteError(t *testing.T) {
	t.Parallel()
	f := newFakeArticles()
	f.put(t, text("t-1", "a1", "one", ""), text("t-1", "a2", "two", ""), text("t-1", "a3", "three", ""))
	raw, _, _, err := countRun(t, f, "t-1", nil)
	require.NoError(t, err)
	for _, at := range []int{0, 10, bytes.Index(raw, []byte(`"a2"`)), len(raw) - 3} {
		f := newFakeArticles()
		f.put(t, text("t-1", "a1", "one", ""), text("t-1", "a2", "two", ""), text("t-1", "a3", "three", ""))
		out := &failAfter{n: at, err: fmt.Errorf("injected: %w", candidate.ErrTooLarge)}
		_, err := newWordCount(t, f).Run(t.Context(), task.Input{
			Job: task.Job{ID: "job-42", Tenant: "t-1", Spec: map[string]string{tasks.SpecPageSize: "1"}}, Out: out,
			Progress: func(context.Context, int64) error { return nil },
		})
		require.ErrorIs(t, err, candidate.ErrTooLarge, "at %d", at)
		require.False(t, fifo.IsPermanent(err), "at %d", at)
		if at < len(raw)/2 {
			require.LessOrEqual(t, len(f.queries()), 2, "at %d: reading stops at the refused write", at)
		}
	}
}

// The fields counted are the spec's; an attribute that is absent, or
// NULL, holds no words.
func TestWordCountFields(t *testing.T) {
	t.Parallel()
	f := newFakeArticles()
	a := text("t-1", "a1", "two words", "and three more")
	a["summary"] = s("just one")
	a["notes"] = &types.AttributeValueMemberNULL{Value: true}
	f.put(t, a)
	for fields, want := range map[string]int64{
		"body":                    3,
		"summary,title":           4,
		"title,body,summary":      7,
		"notes,missing":           0,
		tasks.AttrArticleID:       1,
		"title,body,notes,absent": 5,
	} {
		raw, _, _, err := countRun(t, f, "t-1", map[string]string{tasks.SpecFields: fields})
		require.NoError(t, err, fields)
		r := decodeWordCount(t, raw)
		require.Equal(t, map[string]int64{"a1": want}, words(r), fields)
		require.Equal(t, strings.Split(fields, ","), r.Fields, fields)
	}
}

// Hostile articles: an id that JSON must escape is written exactly; a
// field that is not text, and an article without a string id, fail the
// job (no retry can change them), naming the article and the attribute.
func TestWordCountHostileArticles(t *testing.T) {
	t.Parallel()
	f := newFakeArticles()
	odd := "a \"quoted\" \\ </script>\n\u2028 é 🙂"
	f.put(t, text("t-1", odd, "a title", ""))
	raw, _, _, err := countRun(t, f, "t-1", nil)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{odd: 2}, words(decodeWordCount(t, raw)))

	for name, av := range map[string]types.AttributeValue{
		"number":     n("12"),
		"string set": &types.AttributeValueMemberSS{Value: []string{"a b"}},
		"list":       &types.AttributeValueMemberL{Value: []types.AttributeValue{s("a b")}},
		"binary":     &types.AttributeValueMemberB{Value: []byte("a b")},
	} {
		f := newFakeArticles()
		a := text("t-1", "a1", "a title", "")
		a["body"] = av
		f.put(t, a)
		_, _, _, err := countRun(t, f, "t-1", nil)
		require.True(t, fifo.IsPermanent(err), "%s: %v", name, err)
		require.ErrorIs(t, err, tasks.ErrUncountable, name)
		require.ErrorContains(t, err, `article "a1"`, name)
		require.ErrorContains(t, err, `"body"`, name)
	}
	f = newFakeArticles()
	f.extra = map[string]types.AttributeValue{tasks.AttrTenant: s("t-1"), tasks.AttrArticleID: n("7"), "body": s("x")}
	_, _, _, err = countRun(t, f, "t-1", nil)
	require.True(t, fifo.IsPermanent(err), "%v", err)
	require.ErrorIs(t, err, tasks.ErrUncountable)
	// Nor is another tenant's article counted: the job fails.
	f.extra = text("t-secret", "z9", "secret", "")
	_, _, _, err = countRun(t, f, "t-1", nil)
	require.ErrorIs(t, err, tasks.ErrForeignItem)
	require.NotContains(t, err.Error(), "t-secret")
}

// The word count's own check of a spec: its keys are task, fields and
// page_size, no other (a misspelt key is refused, not ignored); fields is
// 1 to MaxFields comma-separated names of 1 to MaxFieldLength bytes, none
// twice, none with a space at either end (a name inside may hold one); the
// page size is the export's. Each bound at its value; the message names
// the key. Run refuses what ValidateSpec refuses, permanently, having read
// nothing.
func TestWordCountValidateSpec(t *testing.T) {
	t.Parallel()
	wc := newWordCount(t, newFakeArticles())
	names := func(n int) string {
		var b []string
		for i := range n {
			b = append(b, fmt.Sprint("f", i))
		}
		return strings.Join(b, ",")
	}
	for _, spec := range []map[string]string{
		nil, {}, {tasks.SpecFields: "body"}, {tasks.SpecFields: names(tasks.MaxFields)},
		{tasks.SpecFields: strings.Repeat("x", tasks.MaxFieldLength)}, {tasks.SpecFields: "Body,body"},
		{tasks.SpecPageSize: "1"}, {tasks.SpecPageSize: "1000"}, {tasks.SpecFields: "first name,body"},
		{task.SpecTask: tasks.NameWordCount, tasks.SpecFields: "body", tasks.SpecPageSize: "5"},
	} {
		require.NoError(t, wc.ValidateSpec(spec), "%v", spec)
	}
	for _, tc := range []struct {
		spec map[string]string
		says string
	}{
		{map[string]string{tasks.SpecFields: ""}, tasks.SpecFields},
		{map[string]string{tasks.SpecFields: ","}, tasks.SpecFields},
		{map[string]string{tasks.SpecFields: "title,"}, tasks.SpecFields},
		{map[string]string{tasks.SpecFields: "title,,body"}, tasks.SpecFields},
		{map[string]string{tasks.SpecFields: "body,body"}, tasks.SpecFields},
		{map[string]string{tasks.SpecFields: names(tasks.MaxFields + 1)}, tasks.SpecFields},
		{map[string]string{tasks.SpecFields: strings.Repeat("x", tasks.MaxFieldLength+1)}, tasks.SpecFields},
		{map[string]string{tasks.SpecFields: "title, body"}, `" body"`},
		{map[string]string{tasks.SpecFields: " title"}, `" title"`},
		{map[string]string{tasks.SpecFields: "title "}, `"title "`},
		{map[string]string{tasks.SpecFields: "title,\tbody"}, `"\tbody"`},
		{map[string]string{tasks.SpecFields: "title,body\u00a0"}, `"body\u00a0"`},
		{map[string]string{tasks.SpecPageSize: "0"}, tasks.SpecPageSize},
		{map[string]string{tasks.SpecPageSize: "1001"}, tasks.SpecPageSize},
		{map[string]string{"feilds": "body"}, `"feilds"`},
		{map[string]string{task.SpecTask: tasks.NameWordCount, "feilds": "body"}, `"feilds"`},
		{map[string]string{"Fields": "body"}, `"Fields"`},
		{map[string]string{"export": "ignored", task.SpecTask: tasks.NameWordCount}, `"export"`},
		{map[string]string{"pagesize": "5"}, `"pagesize"`},
	} {
		spec := tc.spec
		err := wc.ValidateSpec(spec)
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, "%v", spec)
		require.ErrorContains(t, err, tc.says, "%v", spec)

		f := newFakeArticles()
		_, _, _, err = countRun(t, f, "t-1", spec)
		require.True(t, fifo.IsPermanent(err), "%v", spec)
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, "%v", spec)
		require.Empty(t, f.queries(), "%v: nothing read", spec)
	}
}

// NewWordCount refuses each invalid configuration with ErrInvalidConfig,
// the field named in the message; its result is JSON.
func TestNewWordCountRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	for field, cfg := range map[string]tasks.Config{
		"Articles":      {ArticlesTable: "articles"},
		"ArticlesTable": {Articles: newFakeArticles()},
	} {
		w, err := tasks.NewWordCount(cfg)
		require.ErrorIs(t, err, tasks.ErrInvalidConfig, field)
		require.ErrorContains(t, err, field)
		require.Nil(t, w, field)
	}
	require.Equal(t, "json", newWordCount(t, newFakeArticles()).Ext(task.Job{ID: "job-42"}))
}

// The service's registry runs the word count for a spec that names it,
// and refuses a spec with the word count's own check.
func TestWordCountIsRegistered(t *testing.T) {
	t.Parallel()
	r := registry(t, newFakeArticles(), "articles")
	name, got, err := r.Lookup(map[string]string{task.SpecTask: tasks.NameWordCount})
	require.NoError(t, err)
	require.Equal(t, "wordcount", name)
	require.IsType(t, &tasks.WordCount{}, got)
	err = r.ValidateSpec(map[string]string{task.SpecTask: tasks.NameWordCount, tasks.SpecFields: "body,body"})
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	require.ErrorContains(t, err, "fields")
	// Without its "task", a word count's spec is not taken for an export.
	err = r.ValidateSpec(map[string]string{tasks.SpecFields: "body"})
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	require.ErrorContains(t, err, `task export: tasks: invalid spec: the export does not read "fields", a key of task wordcount`)
}

// The word count through the worker's fenced path on memory stores: a job
// whose spec names it is claimed, counted into the attempt's candidate
// (a .json key), and accepted, with the article count as its progress; a
// job whose articles cannot be counted fails with task_failed and nothing
// uploaded.
func TestWordCountThroughTheWorker(t *testing.T) {
	t.Parallel()
	f := newFakeArticles()
	f.put(t, text("t-1", "a1", "Ordered work", "per job, fenced by generation"), text("t-1", "a2", "Empty", ""),
		text("t-1", "a3", "Third", "one two three"))
	store, err := jobs.NewMemoryStore(jobs.Config{})
	require.NoError(t, err)
	s3, err := s3mem.NewFaultyS3(s3mem.Config{Buckets: []string{"candidates-test"}})
	require.NoError(t, err)
	candidates, err := candidate.New(candidate.Config{Client: s3, Bucket: "candidates-test", SpoolDir: t.TempDir()})
	require.NoError(t, err)
	w, err := worker.New(worker.Config{Jobs: store, Candidates: candidates, Tasks: registry(t, f, f.table)})
	require.NoError(t, err)
	run := func(id string, spec map[string]string) jobs.Job {
		created, err := store.Create(t.Context(), jobs.CreateRequest{JobID: id, IntentID: "i-" + id, Tenant: "t-1", Spec: spec})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
		require.NoError(t, w.Handle(ctx, commandMessage(t, created.Job)))
		job, err := store.Get(t.Context(), id)
		require.NoError(t, err)
		return job
	}

	job := run("job-count", map[string]string{task.SpecTask: tasks.NameWordCount, tasks.SpecPageSize: "2"})
	require.Equal(t, jobs.StatusCompleted, job.Status, "%+v", job.Error)
	require.Equal(t, "candidates/job-count/g0000000001/req-1_msg-1.json", job.Result.Key)
	require.EqualValues(t, 3, job.Progress)
	require.EqualValues(t, 3, job.Version, "claim, one progress renewal, accept")
	key, err := candidate.ParseKey(job.Result.Key)
	require.NoError(t, err)
	r, err := candidates.Open(t.Context(), key)
	require.NoError(t, err)
	raw, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	res := decodeWordCount(t, raw)
	require.Equal(t, map[string]int64{"a1": 7, "a2": 1, "a3": 4}, words(res))
	require.EqualValues(t, 12, res.Total.Words)

	bad := text("t-2", "a1", "", "")
	bad["title"] = n("1")
	f.put(t, bad)
	created, err := store.Create(t.Context(), jobs.CreateRequest{JobID: "job-bad", IntentID: "i-bad", Tenant: "t-2",
		Spec: map[string]string{task.SpecTask: tasks.NameWordCount}})
	require.NoError(t, err)
	ctx := lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: "req-2"})
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, w.Handle(ctx, commandMessage(t, created.Job)))
	failed, err := store.Get(t.Context(), "job-bad")
	require.NoError(t, err)
	require.Equal(t, jobs.StatusFailed, failed.Status)
	require.Equal(t, worker.CodeTaskFailed, failed.Error.Code)
	require.Contains(t, failed.Error.Message, `attribute "title"`)
	require.Equal(t, []string{job.Result.Key}, s3.Keys("candidates-test", ""), "nothing of the failed job uploaded")
}
