package console_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/internal/app/console"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
)

// postSeeOther answers POST target with form; it requires 303 and
// returns the page its Location shows (a GET, so F5 does not repost).
func (b *testBundle) postSeeOther(t testing.TB, target string, form url.Values) string {
	t.Helper()
	w := b.serve(b.request(http.MethodPost, target, form))
	require.Equal(t, http.StatusSeeOther, w.Code, "POST %s: %s", target, w.Body.String())
	to := w.Header().Get("Location")
	require.True(t, strings.HasPrefix(to, "/quarantine/"), "the result page is the console's: %q", to)
	return b.get(t, to, http.StatusOK)
}

// The same redrive form posted twice (a replay, F5 on an answer page, a
// double click) starts one redrive: the form is bound to the hold's epoch
// when it was shown, and the second finds a later one.
func TestAReplayedRedriveFormIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.hold(t, "g", 2)
	form := formOf(t, b, "/quarantine/commands/g/redrive")
	report := b.postSeeOther(t, "/quarantine/commands/g/redrive", form)
	require.Contains(t, report, "2 sent under epoch 1; now draining, 2 parked.")
	require.Len(t, b.sends.Inputs, 2)

	page := b.post(t, "/quarantine/commands/g/redrive", form, http.StatusConflict)
	require.Contains(t, testid(t, page, "error-message"), "the group changed since this page was shown: reload")
	require.Len(t, b.sends.Inputs, 2, "no second redrive")
	h, err := b.holds.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, int64(1), h.Epoch)

	// The epoch is in the MAC: a form whose epoch is edited to the
	// current one is forged.
	form.Set("epoch", "1")
	page = b.post(t, "/quarantine/commands/g/redrive", form, http.StatusForbidden)
	require.Contains(t, page, "CSRF token is missing or is not this console")
	require.Len(t, b.sends.Inputs, 2)
}

// A discard form shown before a redrive is stale once the group is held
// again under a later epoch.
func TestAStaleDiscardFormIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.hold(t, "g", 2)
	stale := discardForm(t, b, "/quarantine/commands/g/discard", "g")
	b.postSeeOther(t, "/quarantine/commands/g/redrive", formOf(t, b, "/quarantine/commands/g/redrive"))
	b.hold(t, "g", 1) // the copy failed again: held under epoch 1
	b.refusedAsStale(t, "/quarantine/commands/g/discard", stale)
	h, err := b.holds.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.NotZero(t, h.Parked, "nothing discarded")

	fresh := formOf(t, b, "/quarantine/commands/g/discard")
	fresh.Set("group_id", "g")
	report := b.postSeeOther(t, "/quarantine/commands/g/discard", fresh)
	require.Contains(t, report, "discarded; now released, 0 parked.")
}

// A discard's form is bounded before any of it is read (its seq too): a
// body of exactly 16 KiB is read, one byte more refused, nothing done.
func TestADiscardsFormIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.hold(t, "g", 2)
	form := formOf(t, b, "/quarantine/commands/g/discard?seq=1001")
	form.Set("group_id", "g")
	page := b.post(t, "/quarantine/commands/g/discard", padded(t, form, 16<<10+1), http.StatusBadRequest)
	require.Contains(t, page, "The form cannot be read")
	h, err := b.holds.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, int64(2), h.Parked, "nothing discarded")
	report := b.postSeeOther(t, "/quarantine/commands/g/discard", padded(t, form, 16<<10))
	require.Contains(t, report, "1 discarded; now held, 1 parked.")
}

// A form made for one queue's group is refused on another queue's group
// of the same id and epoch: the queue is in the MAC.
func TestACSRFTokenOfOneQueueIsRefusedOnAnother(t *testing.T) {
	t.Parallel()
	holds := quarantine.NewMemoryStore()
	q, err := quarantine.New(quarantine.Config{Store: holds, QueueARN: unitARN})
	require.NoError(t, err)
	sends := &quarantinetest.Sends{}
	other, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: holds, Queue: "unit.fifo",
		QueueURL: "http://127.0.0.1:1/q/events.fifo", Sender: sends})
	require.NoError(t, err)
	b := setup(t, func(c *console.Config) {
		c.AllowActions = true
		c.Queues[1].Quarantine = other
	})
	b.hold(t, "g", 1)
	_, err = q.Park(t.Context(), "g", []*events.SQSMessage{sqsMsg("g", 1, "{}")}, errors.New("boom"), true)
	require.NoError(t, err)
	form := formOf(t, b, "/quarantine/commands/g/redrive")
	require.Equal(t, form.Get("epoch"), formOf(t, b, "/quarantine/events/g/redrive").Get("epoch"), "the same group and epoch on both")
	page := b.post(t, "/quarantine/events/g/redrive", form, http.StatusForbidden)
	require.Contains(t, page, "CSRF token is missing or is not this console")
	require.Empty(t, sends.Inputs)
	require.Empty(t, b.sends.Inputs)
}

// padded is form with a padding field that makes its body n bytes.
func padded(t testing.TB, form url.Values, n int) url.Values {
	t.Helper()
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	f.Set("padding", "")
	f.Set("padding", strings.Repeat("x", n-len(f.Encode())))
	require.Len(t, f.Encode(), n)
	return f
}

// A request without the token learns nothing of the console: its 401
// page has no navigation (the queues' names) and no mode.
func TestTheUnauthenticatedPageShowsNoQueueNorMode(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	for _, target := range []string{"/", "/quarantine/commands", "/nowhere"} {
		w := b.serve(bare(http.MethodGet, target, testAddr))
		require.Equal(t, http.StatusUnauthorized, w.Code)
		page := w.Body.String()
		require.Contains(t, page, "needs its token")
		require.NotContains(t, page, "commands", target)
		require.NotContains(t, page, "events", target)
		require.NotContains(t, page, "actions", target)
		require.NotContains(t, page, "read-only", target)
		require.NotContains(t, page, `data-testid="nav"`, target)
	}
}

// Browsers keep cookies by host, not port: two consoles on 127.0.0.1 with
// different ports would overwrite each other's one cookie. Each names its
// cookie with its port.
func TestTwoConsolesOnDifferentPortsKeepTheirOwnCookies(t *testing.T) {
	t.Parallel()
	a := setup(t, func(c *console.Config) { c.Addr = "127.0.0.1:8090" })
	b := setup(t, func(c *console.Config) { c.Addr = "127.0.0.1:8091" })
	require.Equal(t, "fifoworker_console_8090", a.cookie().Name)
	require.Equal(t, "fifoworker_console_8091", b.cookie().Name)
	require.Equal(t, a.console.CookieName(), a.cookie().Name)
	// With both cookies, each console reads its own; the other's alone
	// is not a session.
	r := bare(http.MethodGet, "/", "127.0.0.1:8091")
	r.AddCookie(a.cookie())
	require.Equal(t, http.StatusUnauthorized, b.serve(r).Code)
	r.AddCookie(b.cookie())
	require.Equal(t, http.StatusOK, b.serve(r).Code)
}
