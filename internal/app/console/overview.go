package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// overviewPage is the overview's data. Each part says its own error, so
// one source that fails does not blank the others.
type overviewPage struct {
	Live   liveCounts
	Queues []queueSummary
	Sweep  sweepSummary
	Oldest string
}

// liveCounts are the live jobs by status, counted on one listing page of
// Config.LiveCountLimit jobs (jobs.CountLive: statuses only where the
// store can): a count, not a scan of the table.
type liveCounts struct {
	Limit    string // Config.LiveCountLimit, shown
	Total    string
	ByStatus []statusCount
	Err      string
}

type statusCount struct {
	Status string
	Count  string
	Href   string
}

type queueSummary struct {
	Name       string
	Href       string
	Quarantine bool   // the queue has a quarantine
	Held       string // how many groups are held or draining
	HeldErr    string
	DeadLetter string // the dead-letter queue's depth, or why there is none
}

type sweepSummary struct {
	State string // "configured", "none yet", "not configured", "error"
	Err   string
	Run   sweeper.LastRun
}

// overview reads its sources together, each for at most SourceTimeout,
// so one slow source holds the page up that long and no longer; each part
// writes only its own field of the page.
func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	p := overviewPage{Queues: make([]queueSummary, len(c.cfg.Queues))}
	var wg sync.WaitGroup
	ctx := r.Context()
	c.readSource(ctx, &wg, func(ctx context.Context) { p.Live = c.liveCounts(ctx) })
	c.readSource(ctx, &wg, func(ctx context.Context) { p.Sweep = c.lastSweep(ctx) })
	c.readSource(ctx, &wg, func(ctx context.Context) { p.Oldest = c.oldestCommand(ctx) })
	for i, q := range c.cfg.Queues {
		c.readSource(ctx, &wg, func(ctx context.Context) { p.Queues[i] = c.queueSummary(ctx, q) })
	}
	wg.Wait()
	c.render(w, r, http.StatusOK, "overview", "Overview", "overview", p)
}

// readSource runs part in wg with a context that ends SourceTimeout
// after ctx's start, or with ctx.
func (c *Console) readSource(ctx context.Context, wg *sync.WaitGroup, part func(ctx context.Context)) {
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(ctx, c.cfg.SourceTimeout)
		defer cancel()
		part(ctx)
	})
}

// sourceError is err as a panel shows it: a source that did not answer
// within SourceTimeout says so.
func (c *Console) sourceError(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %v (%v)", c.cfg.SourceTimeout, err)
	}
	return err.Error()
}

func (c *Console) liveCounts(ctx context.Context) liveCounts {
	n, err := jobs.CountLive(ctx, c.cfg.Jobs, c.cfg.LiveCountLimit, c.cfg.Now())
	if err != nil {
		c.cfg.Logger.ErrorContext(ctx, "console: overview: count live jobs", "error", err)
		return liveCounts{Err: c.sourceError(err)}
	}
	atLeast := func(k int) string {
		if n.More {
			return count(int64(k)) + " or more"
		}
		return count(int64(k))
	}
	lc := liveCounts{Total: atLeast(n.Total), Limit: count(int64(c.cfg.LiveCountLimit))}
	for _, s := range []jobs.Status{jobs.StatusPending, jobs.StatusRunning} {
		lc.ByStatus = append(lc.ByStatus, statusCount{Status: string(s), Count: atLeast(n.ByStatus[s]), Href: "/jobs?status=" + url.QueryEscape(string(s))})
	}
	return lc
}

func (c *Console) queueSummary(ctx context.Context, q Queue) queueSummary {
	s := queueSummary{Name: q.Name, Href: "/quarantine/" + url.PathEscape(q.Name), Quarantine: q.Quarantine != nil}
	if q.Quarantine != nil {
		holds, err := q.Quarantine.List(ctx)
		if err != nil {
			c.cfg.Logger.ErrorContext(ctx, "console: overview: list holds", "queue", q.Name, "error", err)
			s.HeldErr = c.sourceError(err)
		}
		s.Held = count(int64(len(holds)))
	}
	if q.DeadLetters == nil {
		s.DeadLetter = "no dead-letter queue"
		return s
	}
	n, err := q.DeadLetters.Depth(ctx)
	if err != nil {
		c.cfg.Logger.ErrorContext(ctx, "console: overview: dead-letter depth", "queue", q.Name, "error", err)
		s.DeadLetter = "unreadable: " + c.sourceError(err)
		return s
	}
	s.DeadLetter = count(n) + " messages"
	return s
}

func (c *Console) lastSweep(ctx context.Context) sweepSummary {
	if c.cfg.Sweeps == nil {
		return sweepSummary{State: "not configured"}
	}
	run, err := c.cfg.Sweeps.LastRun(ctx)
	switch {
	case errors.Is(err, sweeper.ErrNoLastRun):
		return sweepSummary{State: "none yet"}
	case err != nil:
		c.cfg.Logger.ErrorContext(ctx, "console: overview: the sweeper's last run", "error", err)
		return sweepSummary{State: "error", Err: c.sourceError(err)}
	}
	return sweepSummary{State: "configured", Run: run}
}

// oldestCommand says the age of the oldest command, from CloudWatch, or
// what is true instead: why there is no source where the console runs
// (Config.NoOldestCommand), or that CloudWatch has no datapoint. The
// queue is never peeked at (a receive would raise receive counts and lock
// a group).
func (c *Console) oldestCommand(ctx context.Context) string {
	if c.cfg.OldestCommand == nil {
		if c.cfg.NoOldestCommand != "" {
			return c.cfg.NoOldestCommand
		}
		return "unavailable: no CloudWatch source configured"
	}
	age, err := c.cfg.OldestCommand.OldestCommandAge(ctx)
	switch {
	case errors.Is(err, ErrNoDatapoint):
		return err.Error()
	case errors.Is(err, ErrUnavailable):
		return "unavailable here (it comes from CloudWatch)"
	case err != nil:
		c.cfg.Logger.ErrorContext(ctx, "console: overview: the oldest command's age", "error", err)
		return "unreadable: " + c.sourceError(err)
	}
	return age.Round(time.Second).String()
}
