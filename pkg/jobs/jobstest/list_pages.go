package jobstest

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// testListPages: jobs.List shows the live jobs, oldest first and ties by
// id, then the final ones in the order they ended; its pages, walked with
// their tokens, show each job once, at every page size around the edges,
// filtered by tenant or not; a job that ends between pages moves to the
// final jobs; a token that is malformed or another listing's is refused.
// The test's clock runs years before every other test's but testLive's and
// testFinished's, after their bounds: a listing of every tenant may show
// their jobs too (before this test's), and a tenant's shows only its own.
func testListPages(t *testing.T, newStore NewStore) {
	t0 := Start.AddDate(-4, 0, 0)
	b := setupAt(t, t0, newStore, jobs.Config{})
	st, ok := b.store.(jobs.ListStore)
	require.True(t, ok, "%T does not implement jobs.ListStore", b.store)
	at := func(d time.Duration) { t.Helper(); b.clock.Set(t0.Add(d)) }
	tenantA, tenantB := b.tenant, "t-2-"+b.suffix
	create := func(name, tenant string) string {
		t.Helper()
		res, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: b.id(name), IntentID: "intent-" + name, Tenant: tenant,
			Spec: map[string]string{"source": "articles"}})
		require.NoError(t, err)
		return res.Job.ID
	}
	cancel := func(id string) {
		t.Helper()
		_, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id})
		require.NoError(t, err)
	}
	a1, b1 := create("job-a1", tenantA), create("job-b1", tenantB) // one millisecond: by id
	at(time.Minute)
	a2 := create("job-a2", tenantA)
	at(2 * time.Minute)
	b2 := create("job-b2", tenantB)
	at(3 * time.Minute)
	a3 := create("job-a3", tenantA)
	at(4 * time.Minute)
	fa1 := create("job-fa1", tenantA)
	cancel(fa1)
	at(5 * time.Minute)
	fb1 := create("job-fb1", tenantB)
	cancel(fb1)
	at(6 * time.Minute)
	fa2 := create("job-fa2", tenantA)
	cancel(fa2)
	at(10 * time.Minute)

	list := func(o jobs.ListOptions) (jobs.ListPage, error) {
		return jobs.List(b.ctx, st, o, b.clock.Now())
	}
	walk := func(o jobs.ListOptions, want ...string) [][]string {
		t.Helper()
		return walkList(t, b, list, o, want...)
	}
	live := []string{a1, b1, a2, b2, a3}
	all := append(slices.Clone(live), fa1, fb1, fa2)
	for limit := 1; limit <= len(all)+1; limit++ {
		walk(jobs.ListOptions{Limit: limit}, all...)
		walk(jobs.ListOptions{Limit: limit, LiveOnly: true}, live...)
		walk(jobs.ListOptions{Limit: limit, Tenant: tenantA}, a1, a2, a3, fa1, fa2)
		walk(jobs.ListOptions{Limit: limit, Tenant: tenantB}, b1, b2, fb1)
	}
	// At the edges (a tenant's listing holds only this test's jobs): a
	// page of exactly the limit ends the listing when nothing follows it,
	// and goes on to the final jobs when they do.
	liveA, allA := []string{a1, a2, a3}, []string{a1, a2, a3, fa1, fa2}
	require.Equal(t, [][]string{liveA}, walk(jobs.ListOptions{Limit: 3, Tenant: tenantA, LiveOnly: true}, liveA...))
	require.Equal(t, [][]string{liveA[:2], liveA[2:]}, walk(jobs.ListOptions{Limit: 2, Tenant: tenantA, LiveOnly: true}, liveA...))
	require.Equal(t, [][]string{allA}, walk(jobs.ListOptions{Limit: 5, Tenant: tenantA}, allA...))
	require.Equal(t, [][]string{liveA, allA[3:]}, walk(jobs.ListOptions{Limit: 3, Tenant: tenantA}, allA...))
	require.Equal(t, [][]string{allA[:4], allA[4:]}, walk(jobs.ListOptions{Limit: 4, Tenant: tenantA}, allA...))
	// Since bounds the final jobs by when they ended.
	walk(jobs.ListOptions{Limit: 2, Since: 5 * time.Minute}, append(slices.Clone(live), fb1, fa2)...)

	// Tokens: another listing's, or not a token at all, is refused.
	first, err := list(jobs.ListOptions{Limit: 2, Tenant: tenantA})
	require.NoError(t, err)
	require.True(t, first.More)
	for _, o := range []jobs.ListOptions{
		{Limit: 2, Tenant: tenantB, Token: first.Token},
		{Limit: 2, Token: first.Token},
		{Limit: 2, Tenant: tenantA, LiveOnly: true, Token: first.Token},
		{Limit: 2, Tenant: tenantA, Since: time.Hour, Token: first.Token},
		{Limit: 2, Tenant: tenantA, Token: "garbage"},
		{Limit: 2, Tenant: tenantA, Token: first.Token[:len(first.Token)-3]},
		{Limit: 2, Tenant: tenantA, Token: "fwl1.e30"}, // "{}"
	} {
		_, err := list(o)
		require.ErrorIs(t, err, jobs.ErrBadToken, "%+v", o)
		require.ErrorIs(t, err, jobs.ErrInvalid, "%+v", o)
	}
	for _, o := range []jobs.ListOptions{{Limit: -1}, {Limit: jobs.MaxListLimit + 1}, {Since: -time.Second}, {LiveOnly: true, Since: time.Hour}} {
		_, err := list(o)
		require.ErrorIs(t, err, jobs.ErrInvalid, "%+v", o)
	}
	_, err = list(jobs.ListOptions{Limit: jobs.MaxListLimit})
	require.NoError(t, err)

	// A job that ends between pages is not lost: it joins the final jobs.
	page, err := list(jobs.ListOptions{Limit: 1, Tenant: tenantA})
	require.NoError(t, err)
	require.Equal(t, a1, page.Jobs[0].ID)
	at(20 * time.Minute)
	cancel(a3)
	walk(jobs.ListOptions{Limit: 1, Tenant: tenantA, Token: page.Token}, a2, fa1, fa2, a3)
}

// walkList lists every page from o.Token on with list, keeping the jobs
// of b's test only (other tests' may share the store); the DynamoDB
// indexes are eventually consistent, so it tries again (tokens can be
// reused) until it sees want. It returns each page's jobs.
func walkList(t *testing.T, b *bundle, list func(jobs.ListOptions) (jobs.ListPage, error), o jobs.ListOptions, want ...string) (pages [][]string) {
	t.Helper()
	mine := func(id string) bool { return strings.HasSuffix(id, b.suffix) }
	var got []string
	for try := 0; ; try++ {
		got, pages = nil, nil
		for p := o; ; {
			page, err := list(p)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page.Jobs), cmp.Or(p.Limit, jobs.DefaultListLimit))
			var ids []string
			for _, j := range page.Jobs {
				if mine(j.ID) {
					ids = append(ids, j.ID)
				}
			}
			got, pages = append(got, ids...), append(pages, ids)
			require.Equal(t, page.More, page.Token != "", "a token exactly when there may be more")
			if !page.More {
				break
			}
			require.Less(t, len(pages), 100, "the pages do not end")
			p.Token = page.Token
		}
		if slices.Equal(want, got) || try == 20 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, want, got, "walk %+v", o)
	return pages
}
