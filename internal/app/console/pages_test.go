package console_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// testid finds the text of the element whose data-testid is id (the
// first one), with its tags stripped.
func testid(t testing.TB, page, id string) string {
	t.Helper()
	re := regexp.MustCompile(`data-testid="` + regexp.QuoteMeta(id) + `"[^>]*>(.*?)</`)
	m := re.FindStringSubmatch(page)
	require.NotNil(t, m, "no element with data-testid %q in\n%s", id, page)
	return m[1]
}

func TestTheOverviewShowsEachSource(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.create(t, "job-1", "acme")
	b.create(t, "job-2", "acme")
	b.claim(t, "job-2", "attempt-a")
	b.create(t, "job-3", "other")
	b.hold(t, "group-a", 2)
	// Final jobs are not live: neither counted nor a page's More.
	b.storyJob(t, "job-done", 0)
	b.create(t, "job-cancelled", "acme")
	_, err := b.jobs.Cancel(t.Context(), jobs.CancelRequest{JobID: "job-cancelled"})
	require.NoError(t, err)

	page := b.get(t, "/", http.StatusOK)
	require.Equal(t, "3", testid(t, page, "live-total"))
	require.Equal(t, "2", testid(t, page, "live-count-pending"))
	require.Equal(t, "1", testid(t, page, "live-count-running"))
	require.Contains(t, page, `data-testid="held-commands"><a href="/quarantine/commands">1</a>`)
	require.Equal(t, "3 messages", testid(t, page, "dlq-commands"))
	require.Equal(t, "no quarantine", testid(t, page, "held-events"))
	require.Equal(t, "no dead-letter queue", testid(t, page, "dlq-events"))
	require.Equal(t, "no run kept yet", testid(t, page, "sweep-last-run"))
	require.Equal(t, "unavailable: no CloudWatch source configured", testid(t, page, "oldest-command-age"))
	require.Contains(t, page, `data-testid="mode">read-only`)

	b.sweeps.err = nil
	b.sweeps.run = sweeper.LastRun{At: jobstestStart.Add(time.Hour), Report: sweeper.Report{Examined: 12, Deleted: 4, Errors: 1}}
	page = b.get(t, "/", http.StatusOK)
	require.Equal(t, "ended 2026-11-04 10:00:00Z", testid(t, page, "sweep-last-run"))
	require.Equal(t, "1", testid(t, page, "sweep-errors"))
}

var jobstestStart = time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)

func TestTheOverviewSaysWhatIsNotThere(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		change func(*console.Config)
		want   []string
	}{
		{"no sweeps, no queues", func(c *console.Config) { c.Sweeps, c.Queues = nil, nil },
			[]string{`data-testid="sweep-last-run">not configured`, "No queue is configured."}},
		{"the age unavailable", func(c *console.Config) {
			c.OldestCommand = fakeOldest{err: fmt.Errorf("cloudwatch: %w", console.ErrUnavailable)}
		},
			[]string{"unavailable here (it comes from CloudWatch)"}},
		{"the age known", func(c *console.Config) { c.OldestCommand = fakeOldest{age: 95*time.Second + 300*time.Millisecond} },
			[]string{`data-testid="oldest-command-age">1m35s</p>`}},
		{"the age unreadable", func(c *console.Config) { c.OldestCommand = fakeOldest{err: errors.New("throttled")} },
			[]string{"unreadable: throttled"}},
		{"the sweeps unreadable", func(c *console.Config) { c.Sweeps = &fakeSweeps{err: errors.New("no bucket")} },
			[]string{`class="error" data-testid="sweep-last-run">no bucket`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			page := setup(t, c.change).get(t, "/", http.StatusOK)
			for _, w := range c.want {
				require.Contains(t, page, w)
			}
		})
	}
}

// The overview counts the live jobs of one listing page of
// Config.LiveCountLimit: at the limit it says so, past it that there may
// be more; the default limit, and a limit of MaxListLimit, are held at
// their values.
func TestTheOverviewCountsAtMostOnePage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		limit int // Config.LiveCountLimit; 0 the default
		at    int // the limit it counts to
	}{
		{"the default", 0, console.DefaultLiveCountLimit},
		{"the largest", jobs.MaxListLimit, jobs.MaxListLimit},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(cfg *console.Config) { cfg.LiveCountLimit = c.limit })
			for i := range c.at - 1 {
				b.create(t, fmt.Sprintf("job-%04d", i), "acme")
			}
			page := b.get(t, "/", http.StatusOK)
			require.Equal(t, count(c.at-1), testid(t, page, "live-total"))
			b.create(t, "job-last", "acme")
			page = b.get(t, "/", http.StatusOK)
			require.Equal(t, count(c.at), testid(t, page, "live-total"), "exactly a page, and no more")
			require.Contains(t, page, "Counted on the "+count(c.at)+" least recently changed")
			b.create(t, "job-more", "acme")
			page = b.get(t, "/", http.StatusOK)
			require.Equal(t, count(c.at)+" or more", testid(t, page, "live-total"))
			require.Equal(t, count(c.at)+" or more", testid(t, page, "live-count-pending"))
		})
	}
}

// count writes n as the pages do: 1,000.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func TestTheJobsPageFiltersAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for i := range 60 {
		b.create(t, fmt.Sprintf("job-%02d", i), "acme")
		b.clock.Advance(time.Millisecond)
	}
	b.create(t, "job-other", "other")
	b.claim(t, "job-07", "attempt-a")

	page := b.get(t, "/jobs?tenant=acme", http.StatusOK)
	require.Equal(t, 50, strings.Count(page, `data-testid="job-row"`))
	require.NotContains(t, page, "job-other")
	m := regexp.MustCompile(`href="([^"]+)" data-testid="next-page"`).FindStringSubmatch(page)
	require.NotNil(t, m, "a next link")
	next := strings.ReplaceAll(m[1], "&amp;", "&")
	u, err := url.Parse(next)
	require.NoError(t, err)
	require.Equal(t, "acme", u.Query().Get("tenant"))
	require.NotEmpty(t, u.Query().Get(console.PageParam))
	require.False(t, u.Query().Has(console.TokenParam), "the page token does not take the console token's name")
	page = b.get(t, next, http.StatusOK)
	require.Equal(t, 10, strings.Count(page, `data-testid="job-row"`))
	require.NotContains(t, page, `data-testid="next-page"`)

	require.Equal(t, []string{"job-07"}, b.walk(t, "/jobs?status=running"))
	require.Len(t, b.walk(t, "/jobs?status=pending"), 60)
	require.Empty(t, b.walk(t, "/jobs?status=completed"))
	b.storyJob(t, "job-done", 0)
	require.Equal(t, []string{"job-done"}, b.walk(t, "/jobs?status=completed"))
	require.Equal(t, []string{"job-done"}, b.walk(t, "/jobs?status=completed&tenant=acme"))
	page = b.get(t, "/jobs?tenant=other", http.StatusOK)
	require.Contains(t, page, `<a href="/jobs/job-other" data-testid="job-link">job-other</a>`)
}

// walk lists the job ids of every page of the listing target begins.
func (b *testBundle) walk(t testing.TB, target string) []string {
	t.Helper()
	var ids []string
	for pages := 0; target != ""; pages++ {
		require.Less(t, pages, 100, "the listing goes on")
		page := b.get(t, target, http.StatusOK)
		for _, m := range regexp.MustCompile(`data-testid="job-row" data-job-id="([^"]+)"`).FindAllStringSubmatch(page, -1) {
			ids = append(ids, m[1])
		}
		target = ""
		if m := regexp.MustCompile(`href="([^"]+)" data-testid="next-page"`).FindStringSubmatch(page); m != nil {
			target = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	return ids
}

func TestTheJobsPageRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	page := b.get(t, "/jobs?status=lost", http.StatusBadRequest)
	require.Contains(t, testid(t, page, "error-message"), "status &#34;lost&#34;: one of pending, running")
	page = b.get(t, "/jobs?page=nonsense", http.StatusBadRequest)
	require.Contains(t, testid(t, page, "error-message"), "bad continuation token")
	// A token of another listing (another tenant) is refused too.
	for i := range 60 {
		b.create(t, fmt.Sprintf("job-%02d", i), "acme")
	}
	first := b.get(t, "/jobs?tenant=acme", http.StatusOK)
	tok := regexp.MustCompile(`page=([^"&]+)`).FindStringSubmatch(first)[1]
	page = b.get(t, "/jobs?tenant=other&page="+tok, http.StatusBadRequest)
	require.Contains(t, page, "made for another listing")
	page = b.get(t, "/jobs?tenant=acme&status=running&page="+tok, http.StatusBadRequest)
	require.Contains(t, page, "bad continuation token")
}

func TestTheJobPageShowsItsResultCandidatesAndHistory(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	j := b.storyJob(t, "job-42", 2)
	page := b.get(t, "/jobs/job-42", http.StatusOK)

	require.Equal(t, "completed", testid(t, page, "job-status"))
	require.Equal(t, "2", testid(t, page, "job-generation"))
	require.Equal(t, j.Result.SHA256, testid(t, page, "result-sha256"))
	require.Equal(t, "7 bytes", testid(t, page, "result-size"))
	require.Contains(t, page, `href="https://bucket.example/`+j.Result.Key+`?X-Amz-Expires=900" data-testid="result-download"`)

	// The candidates: generation 1's is an orphan, generation 2's the result.
	rows := regexp.MustCompile(`data-testid="candidate-row" data-mark="(\w+)"[^>]*><td>(\d+)</td>`).FindAllStringSubmatch(page, -1)
	require.Len(t, rows, 2)
	require.Equal(t, []string{"orphan", "1"}, rows[0][1:])
	require.Equal(t, []string{"accepted", "2"}, rows[1][1:])

	// The history, in the table and in the picture.
	kinds := regexp.MustCompile(`data-testid="history-row" data-kind="([\w-]+)"`).FindAllStringSubmatch(page, -1)
	var got []string
	for _, k := range kinds {
		got = append(got, k[1])
	}
	require.Equal(t, []string{"created", "claimed", "taken-over", "renewed", "renewed", "completed"}, got)
	require.Contains(t, page, "lease ran out → taken over (generation 2)")
	require.Contains(t, page, `<svg class="timeline" data-testid="timeline"`)
	require.Equal(t, 6, strings.Count(page, `data-testid="timeline-event"`))
	require.Contains(t, page, `data-kind="taken-over" data-lease-ran-out="true"`)
	require.Equal(t, 2, strings.Count(page, `data-testid="timeline-candidate"`))
	require.Contains(t, page, `data-testid="timeline-candidate" data-mark="orphan"`)
	require.Contains(t, page, `data-testid="timeline-candidate" data-mark="accepted"`)
	// The generations' bands, and the axis's times in UTC.
	require.Contains(t, page, ">g1</text>")
	require.Contains(t, page, ">g2</text>")
	require.Contains(t, page, ">2026-11-04 09:00:00Z</text>")
}

// The candidates of a live job: one of an earlier generation is an
// orphan, the current generation's is current.
func TestTheJobPageMarksALiveJobsCandidates(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.create(t, "job-7", "acme")
	j := b.claim(t, "job-7", "attempt-a")
	b.candidate(t, j, "one")
	b.clock.Advance(2 * time.Minute)
	j = b.claim(t, "job-7", "attempt-b")
	b.candidate(t, j, "two")
	page := b.get(t, "/jobs/job-7", http.StatusOK)
	marks := regexp.MustCompile(`data-testid="candidate-row" data-mark="(\w+)"`).FindAllStringSubmatch(page, -1)
	require.Len(t, marks, 2)
	require.Equal(t, "orphan", marks[0][1])
	require.Equal(t, "current", marks[1][1])
	require.Contains(t, page, "No result yet.")
}

// What a tenant or a failure says reaches the page, and its picture,
// escaped.
func TestTheJobPageEscapesWhatUsersWrote(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.create(t, "job-x", `<script>alert(1)</script>`)
	j := b.claim(t, "job-x", "attempt-a")
	b.candidate(t, j, "partial") // of the current generation, but the job failed
	_, err := b.jobs.Fail(t.Context(), jobs.FailRequest{JobID: "job-x", AttemptID: "attempt-a", Generation: j.Generation, Version: j.Version,
		Failure: jobs.Failure{Code: `<svg onload=alert(2)>`, Message: `"><img src=x onerror=alert(3)>`}})
	require.NoError(t, err)
	page := b.get(t, "/jobs/job-x", http.StatusOK)
	require.NotContains(t, page, "<script>alert")
	require.NotContains(t, page, "<svg onload")
	require.NotContains(t, page, "<img src=x")
	require.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.Contains(t, page, `data-kind="failed"`)
	require.Contains(t, page, `data-testid="candidate-row" data-mark="orphan"`, "a failed job's candidate is an orphan")
}

func TestTheJobPageRefusesBadIDs(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	page := b.get(t, "/jobs/no-such-job", http.StatusNotFound)
	require.Contains(t, testid(t, page, "error-message"), "There is no job no-such-job")
	page = b.get(t, "/jobs/"+url.PathEscape("a.b"), http.StatusBadRequest)
	require.Contains(t, testid(t, page, "error-message"), "job id")
	b.get(t, "/jobs/"+strings.Repeat("a", 129), http.StatusBadRequest)
	b.get(t, "/nowhere", http.StatusNotFound)
}

// Without the optional sources the job page says so and still shows the
// job.
func TestTheJobPageWithoutCandidatesOrPresigner(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.Candidates, c.Results = nil, nil })
	b.storyJob(t, "job-1", 0)
	page := b.get(t, "/jobs/job-1", http.StatusOK)
	require.Contains(t, page, `data-testid="candidates-unconfigured">Candidates: not configured.`)
	require.Contains(t, page, "No download link: no presigner is configured.")
	require.NotContains(t, page, "result-download")
}

func TestTheQuarantinePagesShowHoldsAndParkedMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.hold(t, "group-a", 3)
	b.hold(t, "group/b", 1) // a group id may hold a slash

	page := b.get(t, "/quarantine/commands", http.StatusOK)
	require.Equal(t, 2, strings.Count(page, `data-testid="hold-row"`))
	require.Contains(t, page, `<a href="/quarantine/commands/group-a" data-testid="hold-link">group-a</a>`)
	require.Contains(t, page, `href="/quarantine/commands/group%2Fb"`)

	page = b.get(t, "/quarantine/commands/group-a", http.StatusOK)
	require.Equal(t, "held", testid(t, page, "hold-state"))
	require.Equal(t, "0", testid(t, page, "hold-epoch"))
	require.Equal(t, "3", testid(t, page, "hold-parked"))
	require.Contains(t, testid(t, page, "hold-next"), "1001")
	require.Contains(t, testid(t, page, "hold-cause"), "boom: the handler failed")
	seqs := regexp.MustCompile(`data-testid="parked-row" data-seq="(\d+)"`).FindAllStringSubmatch(page, -1)
	require.Len(t, seqs, 3)
	require.Equal(t, []string{"1001", "1002", "1003"}, []string{seqs[0][1], seqs[1][1], seqs[2][1]})
	require.Contains(t, page, `{&#34;job_id&#34;:&#34;group-a&#34;,&#34;n&#34;:1}`)
	require.NotContains(t, page, "redrive-button", "read-only: no action")
	require.NotContains(t, page, "discard-button")

	page = b.get(t, "/quarantine/commands/group%2Fb", http.StatusOK)
	require.Equal(t, "group/b", testid(t, page, "hold-group"))
}

func TestTheQuarantinePagesRefuseBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.get(t, "/quarantine/nowhere", http.StatusNotFound)
	page := b.get(t, "/quarantine/events", http.StatusNotFound)
	require.Contains(t, page, "Queue events has no quarantine.")
	page = b.get(t, "/quarantine/commands/not-held", http.StatusNotFound)
	require.Contains(t, testid(t, page, "error-message"), "Group &#34;not-held&#34; is not held on commands")
	b.get(t, "/quarantine/commands/not-held/redrive", http.StatusNotFound)
	b.hold(t, "g", 1)
	page = b.get(t, "/quarantine/commands/g/discard?seq=12x", http.StatusBadRequest)
	require.Contains(t, page, "is not a sequence number")
}

// A group's page shows at most 500 parked messages, and says so when
// more are parked.
func TestTheGroupPageShowsAtMost500(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.hold(t, "full", 500)
	b.hold(t, "over", 501)
	page := b.get(t, "/quarantine/commands/full", http.StatusOK)
	require.Equal(t, 500, strings.Count(page, `data-testid="parked-row"`))
	require.NotContains(t, page, "parked-limited")
	page = b.get(t, "/quarantine/commands/over", http.StatusOK)
	require.Equal(t, 500, strings.Count(page, `data-testid="parked-row"`))
	require.Contains(t, testid(t, page, "parked-limited"), "The first 500 are shown; 501 are parked")
}

// A parked body is shown up to 300 bytes, cut at a character.
func TestTheGroupPageClipsLongBodies(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	exact := strings.Repeat("a", 300)
	over := "a" + strings.Repeat("é", 151) // 303 bytes; byte 300 is inside an é: cut at 299
	_, err := b.q.Park(t.Context(), "g", []*events.SQSMessage{sqsMsg("g", 1, exact), sqsMsg("g", 2, over)}, errors.New("boom"), true)
	require.NoError(t, err)
	page := b.get(t, "/quarantine/commands/g", http.StatusOK)
	require.Contains(t, page, `<code class="body">`+exact+`</code>`)
	require.Contains(t, page, `<code class="body">a`+strings.Repeat("é", 149)+`…</code>`)
}
