package console

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// cookiePrefix begins the session cookie's name, which ends in the
// console's port: a browser keeps cookies by host, not port, so two
// consoles on 127.0.0.1 would otherwise overwrite each other's.
const cookiePrefix = "fifoworker_console_"

// CookieName is the name of the session cookie this console sets and
// reads: fifoworker_console_PORT.
func (c *Console) CookieName() string {
	_, port, _ := net.SplitHostPort(c.cfg.Addr)
	return cookiePrefix + port
}

// maxForm is the largest action form read: a few short fields.
const maxForm = 16 << 10

// TokenParam is the query parameter the browser presents the token in,
// once: the URL `fifoworker console` prints.
const TokenParam = "token"

// contentSecurityPolicy allows the console's own stylesheet and nothing
// else: no script at all, no frame around it, forms only to itself.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// hostOf is r's Host header as the allowed set writes it.
func hostOf(r *http.Request) string {
	return strings.ToLower(r.Host)
}

// equal compares two secrets in constant time.
func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// authenticate reports whether r carries the console's token: in the
// query once (answered with the session cookie and a redirect to the
// same URL without it), as a bearer token, or as the session cookie. It
// answers a request that does not itself.
func (c *Console) authenticate(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	if q.Has(TokenParam) {
		if !equal(q.Get(TokenParam), c.cfg.Token) {
			c.unauthorized(w, r)
			return false
		}
		http.SetCookie(w, &http.Cookie{
			Name: c.CookieName(), Value: c.session, Path: "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode,
		})
		q.Del(TokenParam)
		// One leading slash: "//host/..." would send the browser to
		// another site.
		to := url.URL{Path: "/" + strings.TrimLeft(r.URL.Path, "/"), RawQuery: q.Encode()}
		http.Redirect(w, r, to.String(), http.StatusSeeOther)
		return false
	}
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if equal(bearer, c.cfg.Token) {
			return true
		}
		c.unauthorized(w, r)
		return false
	}
	if ck, err := r.Cookie(c.CookieName()); err == nil && equal(ck.Value, c.session) {
		return true
	}
	c.unauthorized(w, r)
	return false
}

func (c *Console) unauthorized(w http.ResponseWriter, r *http.Request) {
	c.failAnonymous(w, r, http.StatusUnauthorized,
		"This console needs its token. Open the URL that `fifoworker console` printed when it started (it ends in ?token=...); the token changes with every run.")
}

// action guards an action's route: it exists only with AllowActions.
func (c *Console) action(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.cfg.AllowActions {
			c.fail(w, r, http.StatusForbidden,
				"This console is read-only: redrive and discard need it restarted with --allow-actions.")
			return
		}
		h(w, r)
	}
}

// csrf is the token an action's form carries: bound to this run's token,
// to exactly this action on this queue, group and message, and to the
// hold's epoch when the form was shown. A form another page forges, one
// made for another action, or one shown before the group changed (a
// replay, F5 on an answer, a double click once the first redrive began a
// new epoch) is refused.
func (c *Console) csrf(action, queue, group, seq string, epoch int64) string {
	return mac(c.cfg.Token, "csrf\x00"+action+"\x00"+queue+"\x00"+group+"\x00"+seq+"\x00"+strconv.FormatInt(epoch, 10))
}

// postedAction is an action's POST once checkPost accepted it.
type postedAction struct {
	Seq   string // the message, "" for every parked one (discard)
	Epoch int64  // the hold's epoch when the form was shown
}

// checkPost reads an action's form, bounded to maxForm before any field
// is read, and refuses it when its CSRF token is not the action's for the
// epoch it names, or it is not confirmed. It answers a refused request.
func (c *Console) checkPost(w http.ResponseWriter, r *http.Request, action, queue, group string) (postedAction, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "The form cannot be read: "+err.Error())
		return postedAction{}, false
	}
	p := postedAction{Seq: r.PostFormValue("seq")}
	epoch, err := strconv.ParseInt(r.PostFormValue("epoch"), 10, 64)
	if err != nil || !equal(r.PostFormValue("csrf"), c.csrf(action, queue, group, p.Seq, epoch)) {
		c.fail(w, r, http.StatusForbidden,
			"The form's CSRF token is missing or is not this console's for this action: nothing was done. Start again from the group's page.")
		return postedAction{}, false
	}
	p.Epoch = epoch
	if r.PostFormValue("confirm") != "yes" {
		c.fail(w, r, http.StatusBadRequest, "The action was not confirmed (confirm=yes): nothing was done.")
		return postedAction{}, false
	}
	return p, true
}
