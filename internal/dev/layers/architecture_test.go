package layers_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/layers"
)

// architectureDoc is ARCHITECTURE.md, from this package's directory.
const architectureDoc = "../../../docs/ARCHITECTURE.md"

// TestTheArchitectureTableNamesEachPackagesImports holds ARCHITECTURE.md's
// package table to the tree: each row's "imports of ours" is exactly what
// its packages import of the module (go list, test files not counted), and
// every package go list ./... prints has a row. Nothing else keeps the
// table true, and a reader trusts it more than depguard's rules.
func TestTheArchitectureTableNamesEachPackagesImports(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(architectureDoc)
	require.NoError(t, err)
	rows, err := parseImportTable(string(doc))
	require.NoError(t, err)
	require.Empty(t, strings.Join(tableDiffs(rows, listImports(t, moduleRoot(t))), "\n"),
		"docs/ARCHITECTURE.md's package table is not what go list says")
}

// TestTableDiffsNameTheRowThePackageAndTheDifference breaks the real table
// in each way it can go wrong and requires the message to say where.
func TestTableDiffsNameTheRowThePackageAndTheDifference(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(architectureDoc)
	require.NoError(t, err)
	listed := listImports(t, moduleRoot(t))
	jobsRow := "| `pkg/jobs` | the job item,"
	for _, c := range []struct {
		name, old, replacement, want string
	}{
		{
			name: "an import left out of a row", old: "`internal/base/ids`, `checksum`, `backoff`, `ddbitem` |",
			replacement: "`internal/base/ids`, `checksum`, `backoff` |",
			want:        "row `pkg/jobs`: pkg/jobs imports internal/base/ddbitem, which the row does not name",
		},
		{
			name: "an import the package does not have", old: "`internal/base/ids`, `checksum`, `backoff`, `ddbitem` |",
			replacement: "`internal/base/ids`, `checksum`, `backoff`, `ddbitem`, `emf` |",
			want:        "row `pkg/jobs`: pkg/jobs does not import internal/base/emf, which the row names",
		},
		{
			name: "a row for no package", old: jobsRow,
			replacement: "| `pkg/nosuch` | x | nothing | nothing |\n" + jobsRow,
			want:        "row `pkg/nosuch`: pkg/nosuch is not a package of the module",
		},
		{
			name: "a package without a row", old: jobsRow, replacement: "| `pkg/jobsx` | the job item,",
			want: "pkg/jobs has no row",
		},
		{
			name: "a placeholder that matches nothing", old: "| `functions/<name>` |", replacement: "| `function/<name>` |",
			want: "row `function/<name>`: function/<name> is not a package of the module",
		},
		{
			name: "a package in two rows", old: jobsRow,
			replacement: "| `pkg/jobs` | x | nothing | nothing |\n" + jobsRow,
			want:        "pkg/jobs has 2 rows: `pkg/jobs`, `pkg/jobs`",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Contains(t, string(doc), c.old, "the table changed; update the case")
			rows, err := parseImportTable(strings.Replace(string(doc), c.old, c.replacement, 1))
			require.NoError(t, err)
			require.Contains(t, tableDiffs(rows, listed), c.want)
		})
	}
}

// TestParseImportTableReadsTheNotation: a bare name continues the
// directory of the name before it in its cell, "<name>" stands for one
// directory, "nothing" and "—" are no package, and text outside backquotes
// is a remark.
func TestParseImportTableReadsTheNotation(t *testing.T) {
	t.Parallel()
	rows, err := parseImportTable(tableHead +
		"| `internal/base/ids`, `checksum` | x | nothing | nothing |\n" +
		"| `internal/lambdawire` | x | `internal/app/intake`, `outbox`; `pkg/fifo` (its errors), `jobs` | y |\n" +
		"| `functions/<name>` | x | `internal/lambdawire` | nothing |\n" +
		"| `test` | x | — | — |\n" +
		"\nafter the table\n")
	require.NoError(t, err)
	require.Equal(t, []importRow{
		{Name: "`internal/base/ids`, `checksum`", Packages: []string{"internal/base/ids", "internal/base/checksum"}, Ours: nil},
		{Name: "`internal/lambdawire`", Packages: []string{"internal/lambdawire"}, Ours: []string{"internal/app/intake", "internal/app/outbox", "pkg/fifo", "pkg/jobs"}},
		{Name: "`functions/<name>`", Packages: []string{"functions/<name>"}, Ours: []string{"internal/lambdawire"}},
		{Name: "`test`", Packages: []string{"test"}, Ours: nil},
	}, rows)
	require.True(t, rows[2].names("functions/intake"))
	require.False(t, rows[2].names("functions/intake/x"))
	require.False(t, rows[2].names("functions"))
}

// TestParseImportTableRefusesWhatItCannotRead: a cell it cannot read is an
// error naming the line, never a row read as empty.
func TestParseImportTableRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"no heading":         "| package | owns | imports of ours | and besides |\n",
		"no table":           tableHeading + "\ntext\n",
		"three cells":        tableHead + "| `pkg/jobs` | x | nothing |\n",
		"a pipe in a cell":   tableHead + "| `pkg/jobs` | a | b | nothing | nothing |\n",
		"words, no package":  tableHead + "| `pkg/jobs` | x | the base helpers | nothing |\n",
		"no package named":   tableHead + "| jobs | x | nothing | nothing |\n",
		"an empty table":     tableHead + "\n",
		"an unexpected head": tableHeading + "\n| package | owns | imports | besides |\n|---|---|---|---|\n",
	} {
		_, err := parseImportTable(doc)
		require.Error(t, err, name)
	}
}

const (
	tableHeading = "## Packages and what each may import\n"
	tableHead    = tableHeading + "\n| package | owns | imports of ours | and besides |\n|---|---|---|---|\n"
)

// importRow is one row of the table: the packages its first cell names
// (module-relative; "<name>" stands for any one directory) and what its
// "imports of ours" cell names.
type importRow struct {
	// Name is the first cell as written, for messages.
	Name     string
	Packages []string
	Ours     []string
}

// names reports whether the row names pkg.
func (r importRow) names(pkg string) bool {
	return slices.ContainsFunc(r.Packages, func(p string) bool {
		return placeholderPattern(p).MatchString(pkg)
	})
}

var placeholder = regexp.MustCompile(`<[^/>]+>`)

// placeholderPattern matches the packages a name stands for: itself, or,
// with "<name>" in it, any one directory in its place.
func placeholderPattern(name string) *regexp.Regexp {
	parts := placeholder.Split(name, -1)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, "[^/]+") + "$")
}

// parseImportTable reads the rows of the table under the heading "##
// Packages and what each may import".
func parseImportTable(doc string) ([]importRow, error) {
	_, after, ok := strings.Cut(doc, tableHeading)
	if !ok {
		return nil, fmt.Errorf("no heading %q", strings.TrimSpace(tableHeading))
	}
	lines := strings.Split(after, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "|") })
	if start < 0 || strings.TrimSpace(lines[start]) != "| package | owns | imports of ours | and besides |" {
		return nil, fmt.Errorf("the table under %q does not start with | package | owns | imports of ours | and besides |",
			strings.TrimSpace(tableHeading))
	}
	var rows []importRow
	for _, line := range lines[start+2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		row, err := parseImportRow(line)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("the table under %q has no rows", strings.TrimSpace(tableHeading))
	}
	return rows, nil
}

func parseImportRow(line string) (importRow, error) {
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	if len(cells) != 4 {
		return importRow{}, fmt.Errorf("%d cells, not 4 (a | inside a cell?): %s", len(cells), line)
	}
	name := strings.TrimSpace(cells[0])
	pkgs, err := parsePackageCell(name)
	if err != nil || len(pkgs) == 0 {
		return importRow{}, fmt.Errorf("no package named in the first cell: %s", line)
	}
	ours, err := parsePackageCell(strings.TrimSpace(cells[2]))
	if err != nil {
		return importRow{}, fmt.Errorf("row %s: imports of ours: %w", name, err)
	}
	return importRow{Name: name, Packages: pkgs, Ours: ours}, nil
}

var backquoted = regexp.MustCompile("`([^`]+)`")

// parsePackageCell returns the packages a cell names in backquotes, a bare
// name taking the directory of the name before it ("`pkg/fifo`, `jobs`").
func parsePackageCell(cell string) ([]string, error) {
	if cell == "nothing" || cell == "—" {
		return nil, nil
	}
	matches := backquoted.FindAllStringSubmatch(cell, -1)
	if len(matches) == 0 {
		return nil, fmt.Errorf("%q names no package in backquotes, nor is it \"nothing\" or \"—\"", cell)
	}
	var out []string
	prev := ""
	for _, m := range matches {
		name := m[1]
		if !strings.Contains(name, "/") && prev != "" {
			name = path.Join(path.Dir(prev), name)
		}
		out = append(out, name)
		prev = name
	}
	return out, nil
}

// listImports returns each package of the module, module-relative, with
// what its non-test files import of the module.
func listImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list")
	listed := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], layers.Module+"/")
		require.True(t, ok, "go list printed a package outside the module: %s", fields[0])
		listed[pkg] = []string{}
		for _, imp := range fields[1:] {
			if ours, ok := strings.CutPrefix(imp, layers.Module+"/"); ok {
				listed[pkg] = append(listed[pkg], ours)
			}
		}
	}
	require.NotEmpty(t, listed)
	return listed
}

// tableDiffs returns every difference between the rows and listed, one
// message each, naming the row and the package.
func tableDiffs(rows []importRow, listed map[string][]string) []string {
	var diffs []string
	for _, r := range rows {
		for _, p := range r.Packages {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(listed)), placeholderPattern(p).MatchString) {
				diffs = append(diffs, fmt.Sprintf("row %s: %s is not a package of the module", r.Name, p))
			}
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(listed)) {
		var in []importRow
		for _, r := range rows {
			if r.names(pkg) {
				in = append(in, r)
			}
		}
		switch len(in) {
		case 0:
			diffs = append(diffs, pkg+" has no row")
			continue
		case 1:
		default:
			names := make([]string, len(in))
			for i, r := range in {
				names[i] = r.Name
			}
			diffs = append(diffs, fmt.Sprintf("%s has %d rows: %s", pkg, len(in), strings.Join(names, ", ")))
			continue
		}
		for _, imp := range listed[pkg] {
			if !slices.Contains(in[0].Ours, imp) {
				diffs = append(diffs, fmt.Sprintf("row %s: %s imports %s, which the row does not name", in[0].Name, pkg, imp))
			}
		}
		for _, named := range in[0].Ours {
			if !slices.Contains(listed[pkg], named) {
				diffs = append(diffs, fmt.Sprintf("row %s: %s does not import %s, which the row names", in[0].Name, pkg, named))
			}
		}
	}
	return diffs
}
