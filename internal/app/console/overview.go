package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
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
// MaxListLimit jobs (jobs.CountLive: statuses only where the store can):
// a count, not a scan of the table.
type liveCounts struct {
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

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := overviewPage{Live: c.liveCounts(ctx), Sweep: c.lastSweep(ctx), Oldest: c.oldestCommand(ctx)}
	for _, q := range c.cfg.Queues {
		p.Queues = append(p.Queues, c.queueSummary(ctx, q))
	}
	c.render(w, r, http.StatusOK, "overview", "Overview", "overview", p)
}

func (c *Console) liveCounts(ctx context.Context) liveCounts {
	n, err := jobs.CountLive(ctx, c.cfg.Jobs, jobs.MaxListLimit, c.cfg.Now())
	if err != nil {
		c.cfg.Logger.ErrorContext(ctx, "console: overview: count live jobs", "error", err)
		return liveCounts{Err: err.Error()}
	}
	atLeast := func(k int) string {
		if n.More {
			return count(int64(k)) + " or more"
		}
		return count(int64(k))
	}
	lc := liveCounts{Total: atLeast(n.Total)}
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
			s.HeldErr = err.Error()
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
		s.DeadLetter = "unreadable: " + err.Error()
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
		return sweepSummary{State: "error", Err: err.Error()}
	}
	return sweepSummary{State: "configured", Run: run}
}

// oldestCommand says the age of the oldest command, from CloudWatch; a
// local stack has none, and the queue is never peeked at instead (a
// receive would raise receive counts and lock a group).
func (c *Console) oldestCommand(ctx context.Context) string {
	const unavailable = "unavailable on a local stack (it comes from CloudWatch)"
	if c.cfg.OldestCommand == nil {
		return unavailable
	}
	age, err := c.cfg.OldestCommand.OldestCommandAge(ctx)
	switch {
	case errors.Is(err, ErrUnavailable):
		return unavailable
	case err != nil:
		c.cfg.Logger.ErrorContext(ctx, "console: overview: the oldest command's age", "error", err)
		return "unreadable: " + err.Error()
	}
	return age.Round(time.Second).String()
}
