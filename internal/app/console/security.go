package console

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
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
// hold as the form was shown (its epoch; for a discard-all, its last
// parked message and its count too). A form another page forges, one made
// for another action, or one shown before the group changed (a replay,
// F5 on an answer, a double click once the first redrive began a new
// epoch, a message parked since) is refused.
func (c *Console) csrf(queue, group string, p postedAction) string {
	return c.sign("csrf", p.Action, queue, group, p.Seq, strconv.FormatInt(p.Epoch, 10), p.Through, p.Parked)
}

// sign is the HMAC, under this run's token, of what: kind names what is
// signed, so a signature of one kind is never another's; each part is
// length-prefixed, so no two lists of parts read the same.
func (c *Console) sign(kind string, parts ...string) string {
	var b strings.Builder
	for _, p := range append([]string{kind}, parts...) {
		b.WriteString(strconv.Itoa(len(p)))
		b.WriteByte(':')
		b.WriteString(p)
	}
	return mac(c.cfg.Token, b.String())
}

// postedAction is an action's form, as its confirmation page made it and
// checkPost accepted it.
type postedAction struct {
	Action string // redrive, discard
	Seq    string // the message, "" for every parked one (discard)
	Epoch  int64  // the hold's epoch when the form was shown
	// Through and Parked are a discard-all's hold as it was shown (its
	// last parked message's sequence key and its parked count), "" for
	// another action: parking while held, or a release then a new hold,
	// keeps the epoch, and the form discards only what its page said.
	Through, Parked string
}

// BindsShown reports whether p is bound to the hold's last parked message
// and count (a discard-all), not only to its epoch.
func (p postedAction) BindsShown() bool {
	return p.Action == "discard" && p.Seq == ""
}

// shownAs is the form of action on seq that its confirmation page makes
// of hold h.
func shownAs(action, seq string, h quarantine.HoldRecord) postedAction {
	p := postedAction{Action: action, Seq: seq, Epoch: h.Epoch}
	if p.BindsShown() {
		p.Through, p.Parked = h.Through, strconv.FormatInt(h.Parked, 10)
	}
	return p
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
	p := postedAction{Action: action, Seq: r.PostFormValue("seq"), Through: r.PostFormValue("through"), Parked: r.PostFormValue("parked")}
	epoch, err := strconv.ParseInt(r.PostFormValue("epoch"), 10, 64)
	p.Epoch = epoch
	if err != nil || !equal(r.PostFormValue("csrf"), c.csrf(queue, group, p)) {
		c.fail(w, r, http.StatusForbidden,
			"The form's CSRF token is missing or is not this console's for this action: nothing was done. Start again from the group's page.")
		return postedAction{}, false
	}
	if r.PostFormValue("confirm") != "yes" {
		c.fail(w, r, http.StatusBadRequest, "The action was not confirmed (confirm=yes): nothing was done.")
		return postedAction{}, false
	}
	return p, true
}
