package console

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// PageParam is the jobs listing's query parameter for the next page's
// token, named apart from TokenParam, the console's own token.
const PageParam = "page"

// listLimit is how many jobs a page of the jobs listing shows.
const listLimit = jobs.DefaultListLimit

type jobsPage struct {
	Tenant   string
	Status   string
	Statuses []string
	Jobs     []jobRow
	Next     string // the next page's URL, "" on the last
	Filtered bool   // a filter is applied to each page, which may so hold fewer jobs
}

type jobRow struct {
	jobs.Job
	Href string
}

func (c *Console) jobsList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := jobsPage{Tenant: q.Get("tenant"), Status: q.Get("status")}
	for _, s := range jobs.Statuses {
		p.Statuses = append(p.Statuses, string(s))
	}
	// The listing checks the status, and the token against the options.
	o := jobs.ListOptions{Tenant: p.Tenant, Status: jobs.Status(p.Status), Limit: listLimit, Token: q.Get(PageParam)}
	page, err := jobs.List(r.Context(), c.cfg.Jobs, o, c.cfg.Now())
	switch {
	case errors.Is(err, jobs.ErrInvalid): // ErrBadToken too
		c.fail(w, r, http.StatusBadRequest, "The listing cannot be read: "+err.Error())
		return
	case err != nil:
		c.sourceFailed(w, r, "list jobs", err)
		return
	}
	for _, j := range page.Jobs {
		p.Jobs = append(p.Jobs, jobRow{Job: j, Href: "/jobs/" + url.PathEscape(j.ID)})
	}
	p.Filtered = p.Status != "" || p.Tenant != ""
	if page.More {
		next := url.Values{PageParam: {page.Token}}
		if p.Tenant != "" {
			next.Set("tenant", p.Tenant)
		}
		if p.Status != "" {
			next.Set("status", p.Status)
		}
		p.Next = "/jobs?" + next.Encode()
	}
	c.render(w, r, http.StatusOK, "jobs", "Jobs", "jobs", p)
}

// sourceFailed answers a request whose source failed with 502: the
// console is up, what it reads is not.
func (c *Console) sourceFailed(w http.ResponseWriter, r *http.Request, op string, err error) {
	c.cfg.Logger.ErrorContext(r.Context(), "console: "+op, "error", err)
	c.fail(w, r, http.StatusBadGateway, "console: "+op+": "+err.Error())
}
