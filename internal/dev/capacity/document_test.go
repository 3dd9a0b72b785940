package capacity_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/capacity"
)

var updateCapacityDoc = flag.Bool("update-capacity-doc", false, "rewrite docs/CAPACITY.md's generated blocks from the model")

var documentPath = filepath.Join("..", "..", "..", filepath.FromSlash(capacity.DocumentFile))

// docs/CAPACITY.md is what the model generates now from the committed
// counts and template.yaml: a change to a count, a quota, a price or a
// default fails here until the document is regenerated with the command
// the failure names.
func TestTheCapacityDocumentIsGenerated(t *testing.T) {
	doc, err := os.ReadFile(documentPath)
	require.NoError(t, err)
	want, err := capacity.RegenerateDocument(doc, committed(t), templateSettings(t))
	require.NoError(t, err)
	if *updateCapacityDoc {
		require.NoError(t, os.WriteFile(documentPath, want, 0o644))
		return
	}
	if got := string(doc); got != string(want) {
		t.Fatalf("%s differs from what the model generates now; regenerate it with\n  %s\nfirst difference:\n%s",
			capacity.DocumentFile, capacity.DocumentGeneratedBy, firstDifference(got, string(want)))
	}
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  committed: " + gl + "\n  generated: " + wl
		}
	}
	return "(none)"
}

// handDigit finds a digit in the hand-written prose; the names below hold
// digits that are no figures.
var (
	handDigit   = regexp.MustCompile(`[0-9]`)
	notAFigure  = regexp.MustCompile("`[^`]*`|\\]\\([^)]*\\)|S3|issue 19")
	blockInText = regexp.MustCompile(`(?s)<!-- generated: .*?<!-- end generated: [a-z-]+ -->`)
)

// Every figure in the document comes from the model: outside the
// generated blocks (and code spans, link targets and names such as S3)
// the prose holds no digit.
func TestTheCapacityDocumentsProseHoldsNoFigure(t *testing.T) {
	doc, err := os.ReadFile(documentPath)
	require.NoError(t, err)
	prose := notAFigure.ReplaceAllString(blockInText.ReplaceAllString(string(doc), ""), "")
	for i, line := range strings.Split(prose, "\n") {
		require.False(t, handDigit.MatchString(line), "%s: a figure in the hand-written prose (line %d of the prose): %q: put it in a generated block",
			capacity.DocumentFile, i+1, line)
	}
}

// Regenerate rewrites each block's text and nothing else; a block missing,
// doubled, unknown or ended under another name is refused, naming it.
func TestRegenerate(t *testing.T) {
	blocks := map[string]string{"a": "figure 1\n", "b": "figure 2"}
	start := func(name string) string {
		return "<!-- generated: " + name + " by `" + capacity.DocumentGeneratedBy + "`; do not edit -->"
	}
	doc := "prose\n<!-- generated: a -->\nold\n<!-- end generated: a -->\nmore prose\n<!-- generated: b x -->\n<!-- end generated: b -->\n"
	out, err := capacity.Regenerate([]byte(doc), blocks)
	require.NoError(t, err)
	want := "prose\n" + start("a") + "\nfigure 1\n<!-- end generated: a -->\nmore prose\n" + start("b") + "\nfigure 2\n<!-- end generated: b -->\n"
	require.Equal(t, want, string(out))
	again, err := capacity.Regenerate(out, blocks)
	require.NoError(t, err)
	require.Equal(t, want, string(again), "regenerating is idempotent")

	for name, tc := range map[string]struct{ doc, want string }{
		"missing": {"<!-- generated: a -->\n<!-- end generated: a -->\n", `no block "b"`},
		"twice": {"<!-- generated: a -->\n<!-- end generated: a -->\n<!-- generated: a -->\n<!-- end generated: a -->\n" +
			"<!-- generated: b -->\n<!-- end generated: b -->\n", `block "a" twice`},
		"unknown": {"<!-- generated: a -->\n<!-- end generated: a -->\n<!-- generated: b -->\n<!-- end generated: b -->\n" +
			"<!-- generated: c -->\n<!-- end generated: c -->\n", `block "c": the model writes no such block`},
		"ended as another": {"<!-- generated: a -->\n<!-- end generated: b -->\n", `block "a" ends as "b"`},
	} {
		_, err := capacity.Regenerate([]byte(tc.doc), blocks)
		require.ErrorIs(t, err, capacity.ErrInvalid, name)
		require.ErrorContains(t, err, tc.want, name)
	}
}
