package console_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
)

// bare is a request without any credential.
func bare(method, target, host string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.Host = host
	return r
}

// A page of another site whose name rebinds to 127.0.0.1 sends its own
// name as the Host: refused before anything is read, with or without the
// token.
func TestTheConsoleAnswersOnlyItsOwnHost(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.Addr = "127.0.0.1:8090" })
	for _, host := range []string{"evil.example:8090", "127.0.0.1:8091", "127.0.0.1", "localhost", "", "127.0.0.1.evil.example:8090", "0.0.0.0:8090"} {
		r := b.request(http.MethodGet, "/", nil)
		r.Host = host
		w := b.serve(r)
		require.Equal(t, http.StatusMisdirectedRequest, w.Code, "Host %q", host)
		require.Contains(t, w.Body.String(), "Host header")
		require.NotContains(t, w.Body.String(), "<html", "a plain message")
	}
	for _, host := range []string{"127.0.0.1:8090", "localhost:8090", "LOCALHOST:8090", "[::1]:8090"} {
		r := b.request(http.MethodGet, "/", nil)
		r.Host = host
		require.Equal(t, http.StatusOK, b.serve(r).Code, "Host %q", host)
	}
	// A console on another listen address answers that address too.
	other := setup(t, func(c *console.Config) { c.Addr = "192.0.2.7:9000" })
	r := other.request(http.MethodGet, "/", nil)
	r.Host = "192.0.2.7:9000"
	require.Equal(t, http.StatusOK, other.serve(r).Code)
}

// The token, presented once in the URL, becomes an HttpOnly, strict
// cookie and a redirect to the same URL without it.
func TestTheTokenBecomesASessionCookie(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	w := b.serve(bare(http.MethodGet, "/jobs?tenant=acme&"+console.TokenParam+"="+testToken, testAddr))
	require.Equal(t, http.StatusSeeOther, w.Code)
	require.Equal(t, "/jobs?tenant=acme", w.Header().Get("Location"))
	cookies := w.Result().Cookies()
	require.Len(t, cookies, 1)
	c := cookies[0]
	require.Equal(t, "fifoworker_console_8090", c.Name)
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c.SameSite)
	require.Equal(t, "/", c.Path)
	require.NotEqual(t, testToken, c.Value, "the cookie is not the printed token")

	// The redirect stays on the console: a path of two slashes would be
	// another host's.
	w = b.serve(bare(http.MethodGet, "//evil.example/x?"+console.TokenParam+"="+testToken, testAddr))
	require.Equal(t, http.StatusSeeOther, w.Code)
	require.Equal(t, "/evil.example/x", w.Header().Get("Location"))

	r := bare(http.MethodGet, "/jobs?tenant=acme", testAddr)
	r.AddCookie(c)
	w = b.serve(r)
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), `data-testid="jobs-filter"`)
}

func TestRequestsWithoutTheTokenAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	wrong := func(r *http.Request) *http.Request { return r }
	for name, r := range map[string]*http.Request{
		"nothing":          wrong(bare(http.MethodGet, "/", testAddr)),
		"a wrong token":    wrong(bare(http.MethodGet, "/?token=t0ken-of-this-run-0123456780", testAddr)),
		"an empty token":   wrong(bare(http.MethodGet, "/jobs?token=", testAddr)),
		"a forged cookie":  withCookie(bare(http.MethodGet, "/", testAddr), testToken),
		"an empty cookie":  withCookie(bare(http.MethodGet, "/jobs/job-1", testAddr), ""),
		"a wrong bearer":   withBearer(bare(http.MethodGet, "/", testAddr), "t0ken-of-this-run-012345678"),
		"a cookie's value": withBearer(bare(http.MethodGet, "/", testAddr), b.cookie().Value),
		"an action":        wrong(bare(http.MethodPost, "/quarantine/commands/g/redrive", testAddr)),
	} {
		w := b.serve(r)
		require.Equal(t, http.StatusUnauthorized, w.Code, name)
		require.Contains(t, w.Body.String(), "Open the URL that `fifoworker console` printed", name)
		require.Empty(t, w.Result().Cookies(), name)
	}
	// A script's bearer token is enough.
	w := b.serve(withBearer(bare(http.MethodGet, "/", testAddr), testToken))
	require.Equal(t, http.StatusOK, w.Code)
	// The stylesheet holds nothing secret: the 401 page uses it.
	w = b.serve(bare(http.MethodGet, "/static/console.css", testAddr))
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "text/css; charset=utf-8", w.Header().Get("Content-Type"))
	// ... but only on the console's Host.
	require.Equal(t, http.StatusMisdirectedRequest, b.serve(bare(http.MethodGet, "/static/console.css", "evil.example")).Code)
}

func withCookie(r *http.Request, v string) *http.Request {
	r.AddCookie(&http.Cookie{Name: "fifoworker_console_8090", Value: v})
	return r
}

func withBearer(r *http.Request, tok string) *http.Request {
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

func TestEveryAnswerCarriesTheSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, r := range []*http.Request{
		b.request(http.MethodGet, "/", nil),
		b.request(http.MethodGet, "/jobs/nope", nil),
		bare(http.MethodGet, "/", testAddr),
		bare(http.MethodGet, "/", "evil.example"),
	} {
		h := b.serve(r).Header()
		csp := h.Get("Content-Security-Policy")
		require.Contains(t, csp, "default-src 'none'")
		require.Contains(t, csp, "frame-ancestors 'none'")
		require.NotContains(t, csp, "unsafe-inline")
		require.NotContains(t, csp, "script-src", "no script at all")
		require.Equal(t, "DENY", h.Get("X-Frame-Options"))
		require.Equal(t, "no-referrer", h.Get("Referrer-Policy"))
		require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	}
}

// Read-only, the action routes answer 403 and no page shows a button.
func TestActionsNeedAllowActions(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.hold(t, "g", 2)
	for _, target := range []string{"/quarantine/commands/g/redrive", "/quarantine/commands/g/discard", "/quarantine/commands/g/discard?seq=1001"} {
		page := b.get(t, target, http.StatusForbidden)
		require.Contains(t, page, "restarted with --allow-actions")
	}
	// Even a POST with a valid form: read-only is read-only.
	allowed := setup(t, func(c *console.Config) { c.AllowActions = true })
	allowed.hold(t, "g", 2)
	form := formOf(t, allowed, "/quarantine/commands/g/redrive")
	page := b.post(t, "/quarantine/commands/g/redrive", form, http.StatusForbidden)
	require.Contains(t, page, "--allow-actions")
	h, err := b.holds.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, int64(0), h.Epoch, "nothing was redriven")
	require.Empty(t, b.sends.Inputs)

	page = b.get(t, "/quarantine/commands/g", http.StatusOK)
	require.NotContains(t, page, "redrive-button")
	require.NotContains(t, page, "discard-button")
	require.NotContains(t, page, "discard-one-button")
	require.NotContains(t, page, "<form method=\"post\"")
}

// formOf reads the confirmation form of the action page target: its
// hidden fields.
func formOf(t testing.TB, b *testBundle, target string) url.Values {
	t.Helper()
	page := b.get(t, target, http.StatusOK)
	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="(\w+)" value="([^"]*)">`).FindAllStringSubmatch(page, -1) {
		form.Set(m[1], m[2])
	}
	require.NotEmpty(t, form.Get("csrf"), "the confirmation page has a CSRF token")
	require.Equal(t, "yes", form.Get("confirm"))
	return form
}

func TestActionsRefuseAForgedOrMissingCSRFToken(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.hold(t, "g", 2)
	b.hold(t, "h", 1)
	good := formOf(t, b, "/quarantine/commands/g/redrive")
	forged := func(csrf string) url.Values { return url.Values{"csrf": {csrf}, "confirm": {"yes"}, "group_id": {"g"}} }
	for name, c := range map[string]struct {
		target string
		form   url.Values
	}{
		"no token":               {"/quarantine/commands/g/redrive", url.Values{"confirm": {"yes"}}},
		"a forged token":         {"/quarantine/commands/g/redrive", forged(strings.Repeat("0", 64))},
		"another group's token":  {"/quarantine/commands/h/redrive", good},
		"another action's token": {"/quarantine/commands/g/discard", forged(good.Get("csrf"))},
		"another message's token": {"/quarantine/commands/g/discard", func() url.Values {
			f := formOf(t, b, "/quarantine/commands/g/discard?seq=1001")
			f.Set("seq", "1002")
			f.Set("group_id", "g")
			return f
		}()},
	} {
		page := b.post(t, c.target, c.form, http.StatusForbidden)
		require.Contains(t, page, "CSRF token is missing or is not this console", name)
	}
	for _, g := range []string{"g", "h"} {
		h, err := b.holds.Hold(t.Context(), "unit.fifo", g)
		require.NoError(t, err)
		require.Equal(t, int64(0), h.Epoch, "group %s was not redriven", g)
	}
	require.Empty(t, b.sends.Inputs)
}

// An action's POST must say confirm=yes, and a discard the group's id,
// typed.
func TestActionsNeedTheirConfirmation(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.hold(t, "g", 2)
	form := formOf(t, b, "/quarantine/commands/g/redrive")
	form.Del("confirm")
	page := b.post(t, "/quarantine/commands/g/redrive", form, http.StatusBadRequest)
	require.Contains(t, page, "not confirmed")
	form.Set("confirm", "no")
	b.post(t, "/quarantine/commands/g/redrive", form, http.StatusBadRequest)

	discard := formOf(t, b, "/quarantine/commands/g/discard")
	for _, typed := range []string{"", "G", "h", "g2"} {
		discard.Set("group_id", typed)
		page = b.post(t, "/quarantine/commands/g/discard", discard, http.StatusBadRequest)
		require.Contains(t, page, "Nothing was discarded", "typed %q", typed)
	}
	h, err := b.holds.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, int64(2), h.Parked, "nothing discarded")
	require.Equal(t, int64(0), h.Epoch, "nothing redriven")
	require.Empty(t, b.sends.Inputs)
}

// An action's form is a few short fields: a body over 16 KiB is refused
// before it is read whole, and nothing is done; one of exactly 16 KiB is
// read.
func TestAnActionsFormIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.hold(t, "g", 1)
	form := formOf(t, b, "/quarantine/commands/g/redrive")
	page := b.post(t, "/quarantine/commands/g/redrive", padded(t, form, 16<<10+1), http.StatusBadRequest)
	require.Contains(t, page, "The form cannot be read")
	require.Empty(t, b.sends.Inputs)
	b.postSeeOther(t, "/quarantine/commands/g/redrive", padded(t, form, 16<<10))
	require.Len(t, b.sends.Inputs, 1)
}
