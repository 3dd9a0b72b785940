package console_test

import (
	"fmt"
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
