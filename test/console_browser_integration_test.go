//go:build integration

package test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/browser"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The operator's console in headless Chromium on the local stack, as an
// operator uses it (issue 20): the five functions run in process
// (newRolesRun) and complete a job of the test's own; a poison command
// holds a group of the commands queue with two messages parked
// (holdPoison); the sweeper runs once. The browser opens the console
// without its token and gets the 401 page; opens the token URL; on the
// overview sees one held group and the sweeper's run; follows the jobs
// list to the completed job and sees its timeline (an SVG with its
// created, claimed and completed marks, from the job's history); opens the
// held group on a read-only console and finds no Redrive, then on the
// console that allows actions redrives it, confirms, and reloads the
// group's page until it shows the group released. Each step's page is a
// PNG screenshot in the artefacts directory (browser.Artefacts). Not
// parallel: the functions in process read their endpoints from this
// process's environment.
func TestConsoleInChromiumFollowsAJobAndRedrivesAHeldGroup(t *testing.T) {
	r := newRolesRun(t)
	r.p.Run(t.Context())
	done := r.post("console-done", http.StatusAccepted)
	r.waitView(done, jobs.StatusCompleted)
	held, op := r.holdPoison("console-poison")
	swept, err := r.p.Sweep(t.Context(), false)
	require.NoError(t, err)

	srv := startConsole(t, r.state, r.deployed, op, true, nil)
	readOnly := startConsole(t, r.state, r.deployed, op, false, nil)
	ui := &consoleUI{t: t, b: browser.Start(t, browser.Artefacts(t, t.Name()))}

	// Without the token, every page is the 401 page.
	resp, err := browser.Run(ui.b, chromedp.NavigateResponse(srv.url+"/jobs/"+done))
	require.NoError(t, err)
	require.Equal(t, int64(http.StatusUnauthorized), resp.Status)
	require.Contains(t, ui.text(`[data-testid="error-message"]`), "This console needs its token")
	ui.shot("01-no-token-401")

	// The overview: one group of the commands queue held.
	ui.do(chromedp.Navigate(srv.url + "/?token=" + srv.token))
	require.Equal(t, "1", ui.text(`[data-testid="held-commands"]`), "the overview counts the held group")
	require.Equal(t, "actions allowed", ui.text(`[data-testid="mode"]`))
	require.Contains(t, ui.text(`[data-testid="sweep-last-run"]`), "ended ", "the overview shows the sweeper's last run: %+v", swept)
	ui.shot("02-overview")

	// The jobs list, then the completed job and its timeline.
	ui.click(`[data-testid="nav-jobs"]`)
	ui.wait(fmt.Sprintf(`[data-testid="job-row"][data-job-id=%q]`, done))
	ui.shot("03-jobs")
	ui.click(fmt.Sprintf(`[data-job-id=%q] [data-testid="job-link"]`, done))
	require.Equal(t, done, ui.text(`[data-testid="job-id"]`))
	require.Equal(t, "completed", ui.text(`[data-testid="job-status"]`))
	ui.wait(`svg[data-testid="timeline"]`)
	kinds := ui.attrs(`svg[data-testid="timeline"] [data-testid="timeline-event"]`, "data-kind")
	t.Logf("the timeline's marks: %v", kinds)
	for _, k := range []jobs.StepKind{jobs.StepCreated, jobs.StepClaimed, jobs.StepCompleted} {
		require.Contains(t, kinds, string(k), "the timeline marks the job's %s", k)
	}
	require.Equal(t, string(jobs.StepCreated), kinds[0], "the timeline begins with the creation")
	require.Equal(t, string(jobs.StepCompleted), kinds[len(kinds)-1], "and ends with the accept")
	ui.shot("04-job-timeline")

	// The held group, from the overview's count, on the read-only console
	// first: no Redrive.
	ui.do(chromedp.Navigate(readOnly.url + "/?token=" + readOnly.token))
	require.Equal(t, "read-only", ui.text(`[data-testid="mode"]`))
	ui.click(`[data-testid="held-commands"] a`)
	ui.click(fmt.Sprintf(`[data-group=%q] [data-testid="hold-link"]`, held))
	require.Equal(t, "held", ui.text(`[data-testid="hold-state"]`))
	require.Zero(t, ui.count(`[data-testid="redrive-button"]`), "a read-only console offers no redrive")
	ui.shot("05-group-read-only")

	// The same group on the console that allows actions: redrive, confirm.
	ui.do(chromedp.Navigate(srv.url + "/?token=" + srv.token))
	ui.click(`[data-testid="held-commands"] a`)
	ui.wait(fmt.Sprintf(`[data-testid="hold-row"][data-group=%q]`, held))
	ui.shot("06-holds")
	ui.click(fmt.Sprintf(`[data-group=%q] [data-testid="hold-link"]`, held))
	require.Equal(t, held, ui.text(`[data-testid="hold-group"]`))
	require.Equal(t, "held", ui.text(`[data-testid="hold-state"]`))
	require.Len(t, ui.attrs(`[data-testid="parked-row"]`, "data-seq"), 2, "the poison command and the job's own, parked in order")
	ui.shot("07-group-held")
	ui.click(`[data-testid="redrive-button"]`)
	ui.wait(`[data-testid="confirm-text"]`)
	ui.shot("08-redrive-confirm")
	ui.click(`[data-testid="confirm-submit"]`)
	ui.wait(`[data-testid="report"]`)
	t.Logf("the redrive's report: %s", ui.text(`[data-testid="report"]`))
	ui.shot("09-redrive-report")

	// The worker runs the copies in order and releases the group: reload
	// its page until it says so.
	ui.click(`[data-testid="back-to-group"]`)
	deadline := time.Now().Add(2 * time.Minute)
	for state := ui.text(`[data-testid="hold-state"]`); state != "released"; state = ui.text(`[data-testid="hold-state"]`) {
		require.True(t, time.Now().Before(deadline), "after 2 minutes the group's page still says %s", state)
		time.Sleep(250 * time.Millisecond)
		ui.do(chromedp.Reload())
	}
	ui.shot("10-group-released")
	r.waitView(held, jobs.StatusCompleted)
}

// consoleUI is the browser on the console's pages: each step fails the
// test with what it waited for.
type consoleUI struct {
	t *testing.T
	b *browser.Browser
}

func (u *consoleUI) do(steps ...chromedp.Action[chromedp.Void]) {
	u.t.Helper()
	require.NoError(u.t, u.b.Do(steps...))
}

// wait waits until an element css selects is visible. When none comes,
// the page is saved as failed.png before the test fails: CI keeps it.
func (u *consoleUI) wait(css string) {
	u.t.Helper()
	if err := u.b.Do(chromedp.WaitVisible(chromedp.CSS(css))); err != nil {
		u.shot("failed")
		html, _ := browser.Run(u.b, chromedp.OuterHTML(chromedp.CSS("main")))
		u.t.Fatalf("waiting for %s: %v; the page's main:\n%s", css, err, html)
	}
}

// click clicks the element css selects, once it is visible, and waits
// for the page it leads to.
func (u *consoleUI) click(css string) {
	u.t.Helper()
	u.wait(css)
	resp, err := u.b.DoResponse(chromedp.Click(chromedp.CSS(css)))
	require.NoError(u.t, err, "clicking %s", css)
	require.Less(u.t, resp.Status, int64(400), "clicking %s led to %s: %d", css, resp.URL, resp.Status)
}

// text is the visible text of the element css selects, trimmed.
func (u *consoleUI) text(css string) string {
	u.t.Helper()
	u.wait(css)
	s, err := browser.Run(u.b, chromedp.Text(chromedp.CSS(css)))
	require.NoError(u.t, err, "reading %s", css)
	return strings.TrimSpace(s)
}

// attrs is attribute name of every element css selects, in document
// order; none is an empty list.
func (u *consoleUI) attrs(css, name string) []string {
	u.t.Helper()
	got, err := browser.Run(u.b, chromedp.Evaluate[[]string](fmt.Sprintf(
		`Array.from(document.querySelectorAll(%q), e => e.getAttribute(%q))`, css, name)))
	require.NoError(u.t, err, "reading %s's %s", css, name)
	return got
}

func (u *consoleUI) count(css string) int { return len(u.attrs(css, "data-testid")) }

// shot saves the page as name.png among the test's artefacts.
func (u *consoleUI) shot(name string) {
	u.t.Helper()
	path, err := u.b.Screenshot(name)
	require.NoError(u.t, err)
	u.t.Logf("screenshot %s", path)
}
