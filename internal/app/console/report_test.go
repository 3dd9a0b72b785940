package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// reportLines are the lines of a report page.
func reportLines(page string) []string {
	var out []string
	for _, part := range strings.Split(page, `<p data-testid="report-line">`)[1:] {
		line, _, _ := strings.Cut(part, "</p>")
		out = append(out, line)
	}
	return out
}

// A discard's report has at most 20 lines (maxReportLines): its summary,
// then every archive key up to 19 of them; of more, the first 18 and a
// line that counts the rest.
func TestADiscardsReportHasAtMost20Lines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		keys, listed int
		more         string
	}{
		{19, 19, ""},
		{20, 18, "And 2 more archived under quarantine-archive/."},
		{21, 18, "And 3 more archived under quarantine-archive/."},
	} {
		t.Run(fmt.Sprint(tc.keys), func(t *testing.T) {
			t.Parallel()
			b := heldWithActions(t, tc.keys)
			lines := reportLines(b.postSeeOther(t, "/quarantine/commands/g/discard", discardForm(t, b, "/quarantine/commands/g/discard", "g")))
			require.LessOrEqual(t, len(lines), 20)
			require.Equal(t, fmt.Sprintf("%d discarded; now released, 0 parked.", tc.keys), lines[0])
			archived := 0
			for _, l := range lines {
				if strings.HasPrefix(l, "Archived under ") {
					archived++
				}
			}
			require.Equal(t, tc.listed, archived)
			if tc.more != "" {
				require.Equal(t, tc.more, lines[len(lines)-1])
			}
		})
	}
}

// reportURL is the URL of the report a discard-all of g answers with.
func (b *testBundle) reportURL(t testing.TB) *url.URL {
	t.Helper()
	w := b.serve(b.request(http.MethodPost, "/quarantine/commands/g/discard", discardForm(t, b, "/quarantine/commands/g/discard", "g")))
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	u, err := url.Parse(w.Header().Get("Location"))
	require.NoError(t, err)
	return u
}

const notOurs = "this report link was not made by this console"

// A report's link is signed by the console: one it did not make (a
// crafted link showing a fake "released") is refused, 400, whatever part
// of it was changed.
func TestAReportLinkIsTheConsolesOwn(t *testing.T) {
	t.Parallel()
	b := heldWithActions(t, 2)
	u := b.reportURL(t)
	page := b.get(t, u.String(), http.StatusOK)
	require.Contains(t, page, `data-state="released"`)
	require.Equal(t, "2 discarded; now released, 0 parked.", reportLines(page)[0])

	for name, change := range map[string]func(url.Values){
		"state":     func(v url.Values) { v.Set("state", "held") },
		"line":      func(v url.Values) { v["line"][0] = "0 discarded; now held, 2 parked." },
		"new line":  func(v url.Values) { v.Add("line", "Cause: all is well") },
		"action":    func(v url.Values) { v.Set("action", "redrive") },
		"no sig":    func(v url.Values) { v.Del("sig") },
		"other sig": func(v url.Values) { v.Set("sig", strings.Repeat("0", 64)) },
	} {
		v := u.Query()
		change(v)
		page := b.get(t, u.Path+"?"+v.Encode(), http.StatusBadRequest)
		require.Contains(t, testid(t, page, "error-message"), notOurs, name)
	}
	// Nor is a report of one group shown as another's.
	other := "/quarantine/commands/h/report?" + u.RawQuery
	require.Contains(t, b.get(t, other, http.StatusBadRequest), notOurs)
}

// A read-only console has no reports: its report page is refused as an
// action is (403).
func TestAReadOnlyConsoleHasNoReports(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	page := b.get(t, "/quarantine/commands/g/report?"+url.Values{"action": {"redrive"}, "state": {"released"}, "line": {"2 sent"}}.Encode(), http.StatusForbidden)
	require.Contains(t, testid(t, page, "error-message"), "read-only")
}
