package jobs

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Bounds of a listing.
const (
	// DefaultListLimit is ListOptions.Limit's default.
	DefaultListLimit = 50
	// MaxListLimit is the most jobs one page holds.
	MaxListLimit = 1000
	// ListScan bounds the index entries one page examines: a listing is a
	// look, never a table scan. A page filtered by tenant may so end with
	// fewer than Limit jobs and a token to go on.
	ListScan = 2000
	// listSlack is how far after now a listing's time bound is, so that a
	// job written by a clock a little ahead is listed too.
	listSlack = time.Hour
	// tokenPrefix marks a listing's token, and its format's version.
	tokenPrefix = "fwl1."
)

// ErrBadToken is a continuation token that is malformed, or that another
// listing (other ListOptions) gave. It matches ErrInvalid too.
var ErrBadToken = fmt.Errorf("%w: bad continuation token", ErrInvalid)

// ListStore is what a listing reads: the live and finished indexes, and
// the jobs they name. DynamoStore and MemoryStore have it.
type ListStore interface {
	LivePager
	FinishedLister
	BatchGetter
}

var (
	_ ListStore = (*DynamoStore)(nil)
	_ ListStore = (*MemoryStore)(nil)
)

// ListOptions choose the jobs a listing shows. The zero value lists every
// tenant's live jobs and every final job the table keeps, 50 a page.
type ListOptions struct {
	Tenant string // only this tenant's jobs; "" for all
	// Status is the one status to list; "" for any. A live one (pending,
	// running) reads the live index only, a final one the finished index
	// only; either is filtered after the read, as Tenant is, so a page may
	// end with fewer than Limit jobs and a token to go on.
	Status   Status
	LiveOnly bool          // only the jobs that are not final
	Since    time.Duration // final jobs that ended within it; 0 for all
	Limit    int           // jobs a page, 1 to MaxListLimit; 0 for DefaultListLimit
	Token    string        // the previous page's Token; "" for the first page
}

// Validate says what is wrong with o, as ErrInvalid.
func (o *ListOptions) Validate() error {
	switch {
	case o.Limit < 0 || o.Limit > MaxListLimit:
		return fmt.Errorf("jobs: list: %w: limit %d: 1 to %d", ErrInvalid, o.Limit, MaxListLimit)
	case o.Since < 0:
		return fmt.Errorf("jobs: list: %w: since %v is negative", ErrInvalid, o.Since)
	case o.LiveOnly && o.Since != 0:
		return fmt.Errorf("jobs: list: %w: since is about final jobs, which live only leaves out", ErrInvalid)
	case o.Status == "":
		return nil
	case !slices.Contains(Statuses, o.Status):
		return fmt.Errorf("jobs: list: %w: status %q: one of %s", ErrInvalid, o.Status, statusNames())
	case o.Status.Final() && o.LiveOnly:
		return fmt.Errorf("jobs: list: %w: status %s is final, which live only leaves out", ErrInvalid, o.Status)
	case !o.Status.Final() && o.Since != 0:
		return fmt.Errorf("jobs: list: %w: since is about final jobs, which status %s leaves out", ErrInvalid, o.Status)
	}
	return nil
}

// Statuses are a job's statuses, in the order of its life.
var Statuses = []Status{StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled}

func statusNames() string {
	names := make([]string, len(Statuses))
	for i, s := range Statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// ListPage is one page of a listing.
type ListPage struct {
	Jobs []Job
	// More says there may be jobs the listing has not shown yet; Token
	// then resumes it.
	More  bool
	Token string
}

// listCursor is what a token holds: where the listing is, and the bounds
// and filter it was made with, fixed by its first page.
type listCursor struct {
	Tenant   string       `json:"t,omitempty"`
	Status   Status       `json:"st,omitempty"`
	LiveOnly bool         `json:"l,omitempty"`
	Since    int64        `json:"s,omitempty"` // ms
	Before   int64        `json:"b"`           // epoch ms, both indexes' bound
	After    string       `json:"a,omitempty"` // the finished index's cursor
	Final    bool         `json:"f,omitempty"` // in the finished index
	Live     LivePosition `json:"p"`
}

// List lists jobs a page at a time: first, from the live index, the jobs
// that are not final, least recently changed first (ties by id); then,
// unless o.LiveOnly, from the finished index, the final jobs that ended
// within o.Since, in the order they ended. o.Status reads only the index
// that holds its jobs. Each entry is read (the indexes
// hold keys only) and shown as it is now.
//
// A page's Token resumes strictly after the last index entry the page
// examined. A job that does not change while a listing goes on is shown
// exactly once. One that changes may be shown again as it is then: a live
// job that moves on goes to the live listing's end, and one that ends
// joins the final jobs. The indexes are eventually consistent, so a job
// that changed a moment before a page was read may be missed or shown in
// its old place. A token keeps the first page's time bounds and refuses
// other options (ErrBadToken).
func List(ctx context.Context, st ListStore, o ListOptions, now time.Time) (ListPage, error) {
	return list(ctx, st, o, now, st.GetMany)
}

// list is List reading the jobs the indexes name with get.
func list(ctx context.Context, st ListStore, o ListOptions, now time.Time, get getter) (ListPage, error) {
	if err := o.Validate(); err != nil {
		return ListPage{}, err
	}
	c, err := cursorFor(&o, now)
	if err != nil {
		return ListPage{}, err
	}
	w := &walk{st: st, get: get, c: c, limit: cmp.Or(o.Limit, DefaultListLimit)}
	if !c.Final {
		if err := w.run(ctx, w.live); err != nil {
			return ListPage{}, err
		}
		if !w.more && !c.LiveOnly {
			w.c.Final = true
		}
	}
	if w.c.Final && !w.more {
		if err := w.run(ctx, w.finished); err != nil {
			return ListPage{}, err
		}
	}
	page := ListPage{Jobs: w.out, More: w.more}
	if w.more {
		page.Token = w.c.token()
	}
	return page, nil
}

func cursorFor(o *ListOptions, now time.Time) (listCursor, error) {
	if o.Token == "" {
		c := listCursor{Tenant: o.Tenant, Status: o.Status, LiveOnly: o.LiveOnly || (o.Status != "" && !o.Status.Final()),
			Final: o.Status.Final(), Since: o.Since.Milliseconds(), Before: now.Add(listSlack).UnixMilli()}
		if o.Since > 0 {
			c.After = FinishedBound(now.Add(-o.Since))
		}
		return c, nil
	}
	var c listCursor
	raw, ok := strings.CutPrefix(o.Token, tokenPrefix)
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if !ok || err != nil || json.Unmarshal(b, &c) != nil || c.Before == 0 {
		return c, fmt.Errorf("jobs: list: %w: %.40q is not a token of a jobs listing", ErrBadToken, o.Token)
	}
	if c.Tenant != o.Tenant || c.Status != o.Status || c.LiveOnly != (o.LiveOnly || (o.Status != "" && !o.Status.Final())) ||
		c.Since != o.Since.Milliseconds() {
		return c, fmt.Errorf("jobs: list: %w: it was made for another listing (tenant %q, status %q, live only %t, since %v): repeat its options",
			ErrBadToken, c.Tenant, c.Status, c.LiveOnly, time.Duration(c.Since)*time.Millisecond)
	}
	return c, nil
}

func (c *listCursor) token() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // plain fields always marshal
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// getter reads jobs by id, as BatchGetter.GetMany does.
type getter func(ctx context.Context, ids []string) (map[string]Job, error)

// walk fills one page from the indexes, one section at a time.
type walk struct {
	st       ListStore
	get      getter
	c        listCursor
	limit    int
	out      []Job
	more     bool
	examined int
}

// entry is one index entry of a section, and how to move the cursor past it.
type entry struct {
	id   string
	pass func(c *listCursor)
}

// run reads a section's entries until the page is full (and there is an
// entry after it), the section has no more, or the page examined ListScan.
func (w *walk) run(ctx context.Context, section func(ctx context.Context, n int) ([]entry, error)) error {
	for {
		want := w.limit - len(w.out) + 1 // one more, to know whether there are more
		if w.c.Tenant != "" || w.c.Status != "" {
			// Filtered: read on, within ListScan, 200 entries a round: a
			// round costs a Query a shard whatever it returns, so on a
			// filter that matches one entry in eight, rounds of 100 took
			// two rounds where 200 take one (the console's filtered jobs
			// page, make bench-console: 132 ms against 71). The cost: a
			// round reads each of its entries' jobs before filtering, so a
			// filter that fills a page of 50 from the first 100 entries
			// now reads 200 jobs where it read 100 (200 read units at
			// most, strongly consistent, against 100).
			want = max(want, 200)
		}
		n := min(want, ListScan-w.examined+1)
		entries, err := section(ctx, n)
		if err != nil {
			return err
		}
		got, err := w.read(ctx, entries)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if len(w.out) == w.limit || w.examined == ListScan {
				w.more = true
				return nil
			}
			w.examined++
			e.pass(&w.c)
			if j, ok := got[e.id]; ok && w.c.shows(&j) {
				w.out = append(w.out, j)
			}
		}
		if len(entries) < n {
			return nil
		}
	}
}

// shows reports whether the listing shows j, as the page read it: a live
// listing shows no job that has ended meanwhile (the finished one will).
func (c *listCursor) shows(j *Job) bool {
	return (c.Final || !j.Status.Final()) && (c.Tenant == "" || j.Tenant == c.Tenant) &&
		(c.Status == "" || j.Status == c.Status)
}

func (w *walk) read(ctx context.Context, entries []entry) (map[string]Job, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		ids = append(ids, e.id)
	}
	got, err := w.get(ctx, ids)
	if u := (*UndecodableError)(nil); errors.As(err, &u) {
		return got, nil // the listing shows what it can read
	}
	return got, err
}

func (w *walk) live(ctx context.Context, n int) ([]entry, error) {
	found, err := w.st.LiveAfter(ctx, w.c.Live, time.UnixMilli(w.c.Before), n)
	if err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(found))
	for _, p := range found {
		out = append(out, entry{id: p.ID, pass: func(c *listCursor) { c.Live = p }})
	}
	return out, nil
}

func (w *walk) finished(ctx context.Context, n int) ([]entry, error) {
	found, err := w.st.Finished(ctx, w.c.After, time.UnixMilli(w.c.Before), n)
	if err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(found))
	for _, f := range found {
		out = append(out, entry{id: f.ID, pass: func(c *listCursor) { c.After = f.Key }})
	}
	return out, nil
}
