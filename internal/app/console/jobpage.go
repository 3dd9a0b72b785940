package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

type jobPage struct {
	Job        jobs.Job
	Result     resultView
	Candidates candidatesView
	Timeline   timeline
	History    []step
	NoHistory  bool // the item keeps no history (written before it existed)
}

type resultView struct {
	Has     bool
	Link    string
	LinkTTL string
	LinkErr string // why there is no link
}

type candidatesView struct {
	Configured bool
	Err        string
	Rows       []candidateRow
}

type candidateRow struct {
	candidate.Entry
	Mark string // accepted, orphan, current
	Why  string
}

func (c *Console) job(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := jobs.ValidateID(id); err != nil {
		c.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	j, err := c.cfg.Jobs.Get(ctx, id)
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		c.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no job %s (a final job's item expires some days after it ended).", id))
		return
	case err != nil:
		c.sourceFailed(w, r, "get job "+id, err)
		return
	}
	p := jobPage{Job: j, Result: c.result(ctx, &j), Candidates: c.candidates(ctx, &j), History: historySteps(j.History), NoHistory: len(j.History) == 0}
	var marks []candidateMark
	for _, row := range p.Candidates.Rows {
		marks = append(marks, candidateMark{At: row.LastModified, Generation: row.Key.Generation, Mark: row.Mark,
			Description: row.Key.String() + ": " + row.Why})
	}
	p.Timeline = layoutTimeline(p.History, marks)
	c.render(w, r, http.StatusOK, "job", "Job "+id, "jobs", p)
}

func (c *Console) result(ctx context.Context, j *jobs.Job) resultView {
	if j.Result.Key == "" {
		return resultView{}
	}
	v := resultView{Has: true, LinkTTL: c.cfg.ResultLinkTTL.String()}
	if c.cfg.Results == nil {
		v.LinkErr = "no presigner is configured"
		return v
	}
	link, err := c.cfg.Results.PresignGet(ctx, j.Result, c.cfg.ResultLinkTTL)
	if err != nil {
		c.cfg.Logger.ErrorContext(ctx, "console: presign the result", "job_id", j.ID, "error", err)
		v.LinkErr = err.Error()
		return v
	}
	v.Link = link
	return v
}

// candidates are the job's candidates, each marked: the accepted one (the
// job's result), the orphans (any other of a final job, and any of a
// generation before the current one: the sweeper deletes them), and the
// current generation's of a live job.
func (c *Console) candidates(ctx context.Context, j *jobs.Job) candidatesView {
	if c.cfg.Candidates == nil {
		return candidatesView{}
	}
	entries, err := c.cfg.Candidates.List(ctx, j.ID)
	if err != nil {
		c.cfg.Logger.ErrorContext(ctx, "console: list the job's candidates", "job_id", j.ID, "error", err)
		return candidatesView{Configured: true, Err: err.Error()}
	}
	v := candidatesView{Configured: true}
	for _, e := range entries {
		row := candidateRow{Entry: e}
		switch {
		case e.Key.String() == j.Result.Key:
			row.Mark, row.Why = "accepted", "the job's result"
		case j.Status.Final():
			row.Mark, row.Why = "orphan", "not the result of a job that ended"
		case e.Key.Generation < j.Generation:
			row.Mark, row.Why = "orphan", fmt.Sprintf("of generation %d, before the current %d", e.Key.Generation, j.Generation)
		default:
			row.Mark, row.Why = "current", "the current generation's, not accepted yet"
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}
