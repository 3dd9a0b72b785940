package layers_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/layers"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
)

const mod = layers.Module + "/"

// TestLibrariesAndTheirTestsReachOnlyBaseAndLibraries holds the tree to
// every rule: go list -deps -test -tags integration ./pkg/... reaches no
// package of the module but internal/base and pkg.
func TestLibrariesAndTheirTestsReachOnlyBaseAndLibraries(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for _, r := range layers.Rules {
		v, err := layers.Check(t.Context(), root, "", r)
		require.NoError(t, err)
		require.Empty(t, joinViolations(v), r.Why)
	}
}

// TestTheCheckReportsAnImportInjectedIntoALibrarysTests adds, through go
// list -overlay (nothing is written into the tree), a test file to
// pkg/fifo that imports a package of each forbidden layer, and requires
// the check to report it: an integration-tagged external test file (the
// build tag is read) and an internal test file.
func TestTheCheckReportsAnImportInjectedIntoALibrarysTests(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	rule := layers.Rules[0]
	for _, c := range []struct {
		name, file, pkg, imports, from string
	}{
		{"tooling, integration-tagged external test", "injected_integration_test.go", "fifo_test", "internal/dev/testenv", "pkg/fifo_test [pkg/fifo.test]"},
		{"application, internal test", "injected_test.go", "fifo", "internal/app/intake", "pkg/fifo [pkg/fifo.test]"},
		{"wiring, external test", "injected_test.go", "fifo_test", "internal/lambdawire", "pkg/fifo_test [pkg/fifo.test]"},
		{"simulation, external test", "injected_test.go", "fifo_test", "internal/sim", "pkg/fifo_test [pkg/fifo.test]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "package " + c.pkg + "\n\nimport _ \"" + mod + c.imports + "\"\n"
			if strings.Contains(c.file, "integration") {
				src = "//go:build integration\n\n" + src
			}
			overlay := writeOverlay(t, filepath.Join(root, "pkg", "fifo", c.file), src)
			v, err := layers.Check(t.Context(), root, overlay, rule)
			require.NoError(t, err)
			var found *layers.Violation
			for i := range v {
				if v[i].From == c.from && v[i].Reaches == c.imports {
					found = &v[i]
				}
			}
			require.NotNil(t, found, "the injected import of %s is not reported; got:\n%s", c.imports, joinViolations(v))
			require.Len(t, found.Via, 2, "imported directly")
			require.Equal(t, c.from, found.Via[0])
			require.Contains(t, found.String(), rule.Name)
		})
	}
}

// TestRuleAllowsWhatItNamesAndNothingBeside checks the rule's matching on
// made-up import graphs: a tree allows itself and what is below it, not a
// sibling that shares its name's start; other modules and the standard
// library are allowed; test packages are their package; only the packages
// the patterns named are roots.
func TestRuleAllowsWhatItNamesAndNothingBeside(t *testing.T) {
	t.Parallel()
	rule := layers.Rule{Name: "r", MayReach: []string{mod + "internal/base", mod + "pkg"}}
	lib := func(imports ...string) []layers.Package {
		return []layers.Package{{ImportPath: mod + "pkg/lib", Imports: imports}}
	}
	for _, c := range []struct {
		name    string
		pkgs    []layers.Package
		reaches []string
	}{
		{"the base tree itself", lib(mod + "internal/base"), nil},
		{"below the base tree", lib(mod + "internal/base/ids"), nil},
		{"a sibling of the base tree", lib(mod + "internal/basement"), []string{"internal/basement"}},
		{"the standard library and other modules", lib("net/http", "github.com/aws/aws-sdk-go-v2/aws"), nil},
		{"another module that starts with ours", lib(layers.Module + "x/internal/dev"), nil},
		{"the module's root package", lib(layers.Module), []string{layers.Module}},
		{"the CLI", lib(mod + "cmd/fifoworker"), []string{"cmd/fifoworker"}},
		{"the wiring", lib(mod + "internal/lambdawire"), []string{"internal/lambdawire"}},
		{"a library's test variant", lib(mod + "pkg/other [" + mod + "pkg/lib.test]"), nil},
		{"a library's external tests", lib(mod + "pkg/other_test [" + mod + "pkg/lib.test]"), nil},
		{"tooling's test variant", lib(mod + "internal/dev/testenv [" + mod + "pkg/lib.test]"), []string{"internal/dev/testenv"}},
		{"a dependency listed only as one", []layers.Package{
			{ImportPath: mod + "internal/dev/x", DepOnly: true, Imports: []string{mod + "internal/app/y"}},
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, v := range rule.Violations(c.pkgs) {
				got = append(got, v.Reaches)
			}
			require.Equal(t, c.reaches, got)
		})
	}
}

// TestTheChainIsTheShortestAndStopsAtTheFirstForbiddenPackage: a library
// reaching tooling both directly and through another library is reported
// once per forbidden package, by the direct import; what lies behind the
// forbidden package (internal/app under internal/dev) is not reported.
func TestTheChainIsTheShortestAndStopsAtTheFirstForbiddenPackage(t *testing.T) {
	t.Parallel()
	rule := layers.Rule{Name: "r", MayReach: []string{mod + "pkg"}}
	v := rule.Violations([]layers.Package{
		{ImportPath: mod + "pkg/lib", Imports: []string{mod + "pkg/mid", mod + "internal/dev/tool"}},
		{ImportPath: mod + "pkg/mid", DepOnly: true, Imports: []string{mod + "internal/dev/tool"}},
		{ImportPath: mod + "internal/dev/tool", DepOnly: true, Imports: []string{mod + "internal/app/svc"}},
	})
	require.Len(t, v, 1)
	require.Equal(t, layers.Violation{Rule: "r", From: "pkg/lib", Reaches: "internal/dev/tool", Via: []string{"pkg/lib", "internal/dev/tool"}}, v[0])
}

func TestCheckFailsWhenGoListFails(t *testing.T) {
	t.Parallel()
	_, err := layers.Check(t.Context(), moduleRoot(t), "", layers.Rule{Patterns: []string{"./no/such/dir/..."}})
	require.ErrorIs(t, err, layers.ErrList)
}

// TestDepguardRefusesAnInjectedImportInALibrary runs the pinned
// golangci-lint with depguard alone on a copy of the module's files (those
// git tracks, and new ones it does not ignore): the copy as it is passes, and with a production file added to
// pkg/fifo that imports internal/dev/faultproxy it is refused, by
// depguard, naming the import. (depguard checks the production code; the
// tests' half is the go list check above.)
func TestDepguardRefusesAnInjectedImportInALibrary(t *testing.T) {
	t.Parallel()
	lint := golangciLint(t)
	root := moduleRoot(t)
	dir := copyTracked(t, root)

	out, err := runDepguard(t, lint, dir)
	require.NoError(t, err, "depguard on the unmodified copy:\n%s", out)

	injected := "package fifo\n\nimport _ \"" + mod + "internal/dev/faultproxy\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pkg", "fifo", "injected.go"), []byte(injected), 0o600))
	out, err = runDepguard(t, lint, dir)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "golangci-lint must refuse the injected import; it said (%v):\n%s", err, out)
	require.Regexp(t, `pkg/fifo/injected\.go:3:\d+: import '`+regexp.QuoteMeta(mod+"internal/dev/faultproxy")+`' is not allowed from list '[a-z-]+' \(depguard\)`, out)
}

func runDepguard(t *testing.T, lint, dir string) (string, error) {
	t.Helper()
	// Other runs of golangci-lint (make lint, a helper's) may be going on:
	// without --allow-parallel-runners this one would give up after 5 s.
	cmd := exec.CommandContext(t.Context(), lint, "run", "--allow-parallel-runners", "--enable-only", "depguard", "./pkg/fifo/")
	cmd.Dir = dir
	// Everything the copy needs is in the module cache already: never
	// fetch.
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// golangciLint is the pinned golangci-lint, where the Makefile installs it:
// $(CACHE)/bin/golangci-lint-$(GOLANGCI_LINT_VERSION), the version read
// from the Makefile so that the two cannot differ.
func golangciLint(t *testing.T) string {
	t.Helper()
	makefile, err := os.ReadFile(filepath.Join(moduleRoot(t), "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^GOLANGCI_LINT_VERSION\s*:=\s*(\S+)$`).FindSubmatch(makefile)
	require.NotNil(t, m, "the Makefile names no GOLANGCI_LINT_VERSION")
	path := filepath.Join(localstack.DefaultCacheDir(), "bin", "golangci-lint-"+string(m[1]))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the pinned golangci-lint is needed and is not at %s (%v): run make tools (or make lint), which installs it there", path, err)
	}
	return path
}

// copyTracked copies the files git tracks in root, and the new files it
// does not ignore (a file not yet added may be what the rest needs to
// build), as they are in the working tree, to a directory of the test's
// own.
func copyTracked(t *testing.T, root string) string {
	t.Helper()
	ls := exec.CommandContext(t.Context(), "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	out, err := ls.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("%w: %s", err, exit.Stderr)
	}
	require.NoError(t, err, "git ls-files in %s: this test copies the module's files as git lists them, so it runs in a git checkout", root)
	dir := t.TempDir()
	for name := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree, not yet in the index
		}
		require.NoError(t, err)
		to := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
		require.NoError(t, os.WriteFile(to, data, 0o600))
	}
	return dir
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "env", "GOMOD").Output()
	require.NoError(t, err)
	gomod := strings.TrimSpace(string(out))
	require.NotEmpty(t, gomod, "not in a module")
	return filepath.Dir(gomod)
}

// writeOverlay writes a go list -overlay file that adds a file at path
// with src, and returns its name.
func writeOverlay(t *testing.T, path, src string) string {
	t.Helper()
	dir := t.TempDir()
	content := filepath.Join(dir, "src.go")
	require.NoError(t, os.WriteFile(content, []byte(src), 0o600))
	data, err := json.Marshal(map[string]map[string]string{"Replace": {path: content}})
	require.NoError(t, err)
	overlay := filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(overlay, data, 0o600))
	return overlay
}

func joinViolations(v []layers.Violation) string {
	lines := make([]string, len(v))
	for i, x := range v {
		lines[i] = x.String()
	}
	return strings.Join(lines, "\n")
}
