package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The second task: a word count of t-2's articles, which the worker runs
// because the job's spec names it. Every seeded article's title, "Article
// <n> of <tenant>", is four words, and it has no body.
const (
	wordCountIntent  = "count-intent-1"
	wordCountTenant  = "t-2"
	wordsPerArticle  = 4
	wordCountPageLen = 50
)

// submitWordCount creates the word-count job, and shows intake refusing a
// spec that names a task the service does not run.
func (d *demoRun) submitWordCount(ctx context.Context, articles map[string]int) error {
	spec := fmt.Sprintf(`{"task":%q,"page_size":"%d"}`, tasks.NameWordCount, wordCountPageLen)
	id, status, err := d.postSpec(ctx, wordCountTenant, wordCountIntent, spec, true)
	if err != nil || status != http.StatusAccepted {
		return answerErr("the word count", status, err)
	}
	d.submitted = append(d.submitted, demoJob{id: id, tenant: wordCountTenant, intent: wordCountIntent, task: tasks.NameWordCount,
		role: "word count: the second task", articles: articles[wordCountTenant]})
	d.say("POST /jobs  {\"spec\":%s}  → 202 %s (the job names its task)", spec, id)

	resp, _, err := d.send(ctx, APIRequest(http.MethodPost, "/jobs", wordCountTenant, "intent-z", `{"spec":{"task":"translate"}}`))
	if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Body, intake.CodeUnknownTask) {
		return answerErr("bad request (a task the service does not run), which wants 400 unknown_task,", resp.StatusCode, err)
	}
	d.sum.BadRequestsRefused++
	d.say("bad request (a task the service does not run) → %d %s", resp.StatusCode, strings.TrimSpace(resp.Body))
	return nil
}

// resultChecker is the check of a completed job's result, by its task.
func (d *demoRun) resultChecker(j demoJob) func(context.Context, *candidate.Store, *jobs.Job, int) error {
	if j.task == tasks.NameWordCount {
		return d.checkWordCount
	}
	return d.checkResult
}

// checkWordCount reads a word count's result back: one JSON object whose
// articles are the tenant's, each of wordsPerArticle words, with totals
// that add up, and whose count is the job's progress.
func (d *demoRun) checkWordCount(ctx context.Context, cands *candidate.Store, job *jobs.Job, want int) error {
	key, err := candidate.ParseKey(job.Result.Key)
	if err != nil {
		return err
	}
	if key.Ext != "json" {
		return fmt.Errorf("result %s is not JSON", job.Result.Key)
	}
	r, err := cands.Open(ctx, key)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if err := r.Close(); err != nil { // the checksum is verified at the end
		return err
	}
	var res tasks.WordCountResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("result is not the word count's JSON: %w", err)
	}
	var words int64
	for _, a := range res.Articles {
		if a.Words != wordsPerArticle {
			return fmt.Errorf("an article of %d words; every seeded article has %d", a.Words, wordsPerArticle)
		}
		words += a.Words
	}
	if res.Tenant != job.Tenant || len(res.Articles) != want || res.Total.Articles != int64(want) || job.Progress != int64(want) || res.Total.Words != words {
		return fmt.Errorf("word count of %s: %d articles (total %d, %d words of %d), progress %d; the tenant has %d articles",
			res.Tenant, len(res.Articles), res.Total.Articles, res.Total.Words, words, job.Progress, want)
	}
	d.sum.WordCounted++
	d.say("word count %s: %d articles, %d words, as seeded", job.ID, res.Total.Articles, res.Total.Words)
	return nil
}
