package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"
)

//go:embed assets
var assets embed.FS

// stylePath is where the stylesheet is served.
const stylePath = "/static/console.css"

// pageNames are the templates under assets/, each rendered in the
// layout.
var pageNames = []string{"overview", "jobs", "job", "holds", "group", "confirm", "report", "error"}

// pages are the parsed templates, one set per page.
type pages struct {
	byName map[string]*template.Template
}

var funcs = template.FuncMap{
	"utc":   utc,
	"count": count,
	"bytes": humanBytes,
	"clip":  clip,
}

func parsePages() (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// view is what the layout reads: the page's title, which navigation entry
// is current, and the page's own data.
type view struct {
	Title   string
	Nav     string
	Queues  []navQueue
	Actions bool // AllowActions
	// Anonymous: the request did not authenticate; the page has no
	// navigation and no mode.
	Anonymous bool
	Now       time.Time
	Data      any
}

type navQueue struct {
	Name, Href string
}

// render writes page name with data, status and the layout; it renders
// into a buffer first, so a template that fails leaves no half page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name, title, nav string, data any) {
	v := view{Title: title, Nav: nav, Actions: c.cfg.AllowActions, Now: c.cfg.Now(), Data: data}
	for _, q := range c.cfg.Queues {
		v.Queues = append(v.Queues, navQueue{Name: q.Name, Href: "/quarantine/" + url.PathEscape(q.Name)})
	}
	c.write(w, r, status, name, v)
}

// failAnonymous answers a request that did not authenticate with status
// and msg, in a page without the navigation or the mode: it must not
// learn the queues' names or whether actions are allowed.
func (c *Console) failAnonymous(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.write(w, r, status, "error", view{Title: http.StatusText(status), Anonymous: true, Now: c.cfg.Now(), Data: errorPage{Status: status, Message: msg}})
}

// write renders page name with v into a buffer first, so a template that
// fails leaves no half page.
func (c *Console) write(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	var b bytes.Buffer
	if err := c.pages.byName[name].Execute(&b, v); err != nil {
		c.cfg.Logger.ErrorContext(r.Context(), "console: render", "page", name, "error", err)
		http.Error(w, "console: the page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// fail answers r with status and a page that says msg.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.render(w, r, status, "error", http.StatusText(status), "", errorPage{Status: status, Message: msg})
}

type errorPage struct {
	Status  int
	Message string
}

func serveStyle(w http.ResponseWriter, _ *http.Request) {
	b, err := fs.ReadFile(assets, "assets/console.css")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	_, _ = w.Write(b)
}

// utc shows a time in UTC to the second, "" for the zero time.
func utc(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// count shows n with thousands separators: 1,000.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}

// humanBytes shows a size in bytes, with KiB or MiB beside a large one.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%s bytes (%.1f MiB)", count(n), float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%s bytes (%.1f KiB)", count(n), float64(n)/(1<<10))
	}
	return count(n) + " bytes"
}

// maxShown is the most of a parked body a page shows.
const maxShown = 300

// clip is s up to maxShown bytes, cut at a character's start, with an
// ellipsis when it was longer.
func clip(s string) string {
	if len(s) <= maxShown {
		return s
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
