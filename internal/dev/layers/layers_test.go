package layers_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/layers"
)

const mod = layers.Module + "/"

// TestTheTreeKeepsEveryRule holds the tree to every rule: go list -deps
// -test -tags integration ./pkg/... reaches no package of the module but
// internal/base, the libraries and each library's own helpers, and the
// functions' Lambda build no test code.
func TestTheTreeKeepsEveryRule(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for _, r := range []layers.Rule{layers.Libraries, layers.Functions} {
		v, err := layers.Check(t.Context(), root, "", r)
		require.NoError(t, err)
		require.Empty(t, joinViolations(v), r.Why)
	}
}

// TestTheLibrariesRuleHoldsEveryLibrary: the libraries' rule names every
// package under pkg (a rule narrowed to some of them would let the others
// reach anything).
func TestTheLibrariesRuleHoldsEveryLibrary(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	libraries := goList(t, root, "./pkg/...")
	require.NotEmpty(t, libraries)
	require.Subset(t, goList(t, root, layers.Libraries.Patterns...), libraries)
}

// TestTheCheckReportsAnImportInjectedIntoALibrarysTests adds, through go
// list -overlay (nothing is written into the tree), a test file to a
// library that imports a package of each forbidden layer, or another
// library's conformance helpers, and requires the check to report it: an
// integration-tagged external test file (the build tag is read) and
// internal test files.
func TestTheCheckReportsAnImportInjectedIntoALibrarysTests(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	rule := layers.Libraries
	for _, c := range []struct {
		name, dir, file, pkg, imports, from string
	}{
		{"tooling, integration-tagged external test", "pkg/fifo", "injected_integration_test.go", "fifo_test", "internal/dev/testenv", "pkg/fifo_test [pkg/fifo.test]"},
		{"application, internal test", "pkg/fifo", "injected_test.go", "fifo", "internal/app/intake", "pkg/fifo [pkg/fifo.test]"},
		{"wiring, external test", "pkg/fifo", "injected_test.go", "fifo_test", "internal/lambdawire", "pkg/fifo_test [pkg/fifo.test]"},
		{"simulation, external test", "pkg/fifo", "injected_test.go", "fifo_test", "internal/sim", "pkg/fifo_test [pkg/fifo.test]"},
		{"another library's conformance suite, internal test", "pkg/quarantine", "injected_test.go", "quarantine", "pkg/jobs/jobstest", "pkg/quarantine [pkg/quarantine.test]"},
		{"another library's conformance suite, from a conformance suite's tests", "pkg/candidate/candidatetest", "injected_test.go", "candidatetest_test", "pkg/quarantine/quarantinetest", "pkg/candidate/candidatetest_test [pkg/candidate/candidatetest.test]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "package " + c.pkg + "\n\nimport _ \"" + mod + c.imports + "\"\n"
			if strings.Contains(c.file, "integration") {
				src = "//go:build integration\n\n" + src
			}
			overlay := writeOverlay(t, filepath.Join(root, c.dir, c.file), src)
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
	rule := layers.Rule{Name: "r", MayReach: []string{mod + "internal/base/...", mod + "pkg/..."}}
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

// TestALibraryMayReachItsOwnHelpersAndWhatIsNamedExactly checks Own and
// exact patterns on made-up import graphs: a library and its tests reach
// its own tree (its conformance helpers), and of another library only the
// package named, not its helpers; an external test package ("p_test") is
// p's.
func TestALibraryMayReachItsOwnHelpersAndWhatIsNamedExactly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		own           string
		root, imports string
		reaches       []string
	}{
		{"its own conformance helpers", mod + "pkg", "pkg/lib", "pkg/lib/libtest", nil},
		{"its own conformance helpers, from its external tests", mod + "pkg", "pkg/lib_test [" + mod + "pkg/lib.test]", "pkg/lib/libtest", nil},
		{"its own package, from its helpers' external tests", mod + "pkg", "pkg/lib/libtest_test [" + mod + "pkg/lib/libtest.test]", "pkg/lib/libtest", nil},
		{"another library named exactly", mod + "pkg", "pkg/lib", "pkg/other", nil},
		{"another library's conformance helpers", mod + "pkg", "pkg/lib", "pkg/other/othertest", []string{"pkg/other/othertest"}},
		{"another library's conformance helpers, from a library's helpers", mod + "pkg", "pkg/lib/libtest", "pkg/other/othertest", []string{"pkg/other/othertest"}},
		{"a library whose name starts with its own", mod + "pkg", "pkg/lib", "pkg/libx", []string{"pkg/libx"}},
		{"its own helpers, without Own", "", "pkg/lib", "pkg/lib/libtest", []string{"pkg/lib/libtest"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rule := layers.Rule{Name: "r", Own: c.own, MayReach: []string{mod + "pkg/lib", mod + "pkg/other"}}
			var got []string
			for _, v := range rule.Violations([]layers.Package{{ImportPath: mod + c.root, Imports: []string{mod + c.imports}}}) {
				got = append(got, v.Reaches)
			}
			require.Equal(t, c.reaches, got)
		})
	}
}

// TestRefuseWinsOverMayReachAndHoldsOtherModules: a refused pattern is
// refused where MayReach allows it, and in another module, whose packages
// are otherwise allowed.
func TestRefuseWinsOverMayReachAndHoldsOtherModules(t *testing.T) {
	t.Parallel()
	rule := layers.Rule{
		Name:     "r",
		MayReach: []string{mod + "internal/app/..."},
		Refuse:   []string{mod + "...test", "example.com/testing/..."},
	}
	for _, c := range []struct {
		imports string
		refused bool
	}{
		{mod + "internal/app/svc", false},
		{mod + "internal/app/svc/svctest", true},
		{mod + "test", true},
		{"example.com/testing", true},
		{"example.com/testing/assert", true},
		{"example.com/testingx", false},
		{"example.com/other", false},
	} {
		t.Run(c.imports, func(t *testing.T) {
			v := rule.Violations([]layers.Package{{ImportPath: mod + "functions/f", Imports: []string{c.imports}}})
			require.Equal(t, c.refused, len(v) == 1, "%v", v)
		})
	}
}

// TestTheFunctionsBuildReportsInjectedTestCode adds, through go list
// -overlay, a file to internal/lambdawire that imports the test code a
// function must not carry and the tooling, and requires the functions'
// rule to report each, reached through the wiring. The file is built only
// as the Lambda build builds (its tag, linux/arm64, no cgo), so the check
// is seen to list that build.
func TestTheFunctionsBuildReportsInjectedTestCode(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	forbidden := []string{
		"github.com/stretchr/testify/require", "github.com/anishathalye/porcupine",
		mod + "pkg/awstest", mod + "pkg/s3mem", mod + "pkg/jobs/jobstest", mod + "internal/app/projection/projectiontest",
		mod + "internal/dev/faultproxy",
	}
	src := "//go:build lambda.norpc && linux && arm64 && !cgo\n\npackage lambdawire\n\nimport (\n"
	for _, imp := range forbidden {
		src += "\t_ \"" + imp + "\"\n"
	}
	overlay := writeOverlay(t, filepath.Join(root, "internal", "lambdawire", "injected.go"), src+")\n")
	v, err := layers.Check(t.Context(), root, overlay, layers.Functions)
	require.NoError(t, err)
	for _, imp := range forbidden {
		want := strings.TrimPrefix(imp, mod)
		require.True(t, slices.ContainsFunc(v, func(x layers.Violation) bool {
			return x.From == "functions/worker" && x.Reaches == want && slices.Contains(x.Via, "internal/lambdawire") && x.Rule == layers.Functions.Name
		}), "the injected import of %s is not reported; got:\n%s", imp, joinViolations(v))
	}
}

// TestTheChainIsTheShortestAndStopsAtTheFirstForbiddenPackage: a library
// reaching tooling both directly and through another library is reported
// once per forbidden package, by the direct import; what lies behind the
// forbidden package (internal/app under internal/dev) is not reported.
func TestTheChainIsTheShortestAndStopsAtTheFirstForbiddenPackage(t *testing.T) {
	t.Parallel()
	rule := layers.Rule{Name: "r", MayReach: []string{mod + "pkg/..."}}
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

// TestDepguardRefusesImportsThatOnlyALayerRuleCovers runs the pinned
// golangci-lint with depguard alone on a copy of the module's files (those
// git tracks, and new ones it does not ignore). The copy lies below a
// directory named pkg, so that a rule's file glob matching the checkout's
// path instead of the module's would show (.golangci.yml anchors them at
// ${base-path}): the copy as it is passes. Then production files are added
// that import what their layer forbids, each into a package that no rule
// of its own narrows (so the layer's rule alone can refuse it), and each
// is required to be refused by the rule named, no more and no less. No
// injected import makes a cycle (the wiring imports localdeploy, not the
// demo, which imports the wiring; base imports no library that imports
// it): the packages would not load, and depguard would not run.
// (depguard checks the production code; the tests' half is the go list
// check above.)
func TestDepguardRefusesImportsThatOnlyALayerRuleCovers(t *testing.T) {
	t.Parallel()
	lint := golangciLint(t)
	dir := filepath.Join(t.TempDir(), "pkg", "clone")
	copyTracked(t, moduleRoot(t), dir)

	out, err := runDepguard(t, lint, dir)
	require.NoError(t, err, "depguard on the unmodified copy:\n%s", out)

	type refusal struct{ file, imports, list string }
	var want []refusal
	inject := func(file, pkg string, refused map[string][]string) {
		src := "package " + pkg + "\n\nimport (\n"
		for _, imp := range slices.Sorted(maps.Keys(refused)) {
			src += "\t_ \"" + imp + "\"\n"
			for _, list := range refused[imp] {
				want = append(want, refusal{file, imp, list})
			}
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(src+")\n"), 0o600))
	}
	const testify = "github.com/stretchr/testify/require"
	inject("internal/app/worker/injected.go", "worker", map[string][]string{
		mod + "internal/dev/localstack": {"layer-app-imports-libraries-and-base"},
		mod + "pkg/awstest":             {"layer-app-imports-libraries-and-base"},
		mod + "pkg/jobs/jobstest":       {"layer-app-imports-libraries-and-base"},
		testify:                         {"layer-app-imports-libraries-and-base"},
		// The application's own conformance suite is test code too.
		mod + "internal/app/projection/projectiontest": {"layer-app-imports-libraries-and-base"},
	})
	inject("internal/lambdawire/injected.go", "lambdawire", map[string][]string{
		mod + "internal/dev/localdeploy": {"layer-wiring-imports-app-libraries-and-base"},
		mod + "pkg/s3mem":                {"layer-wiring-imports-app-libraries-and-base"},
	})
	inject("internal/sim/injected.go", "sim", map[string][]string{
		mod + "pkg/candidate/candidatetest":            {"layer-simulation-runs-app-and-libraries"},
		mod + "internal/app/projection/projectiontest": {"layer-simulation-runs-app-and-libraries"},
		testify: {"layer-simulation-runs-app-and-libraries"},
	})
	inject("functions/worker/injected.go", "main", map[string][]string{
		mod + "internal/app/intake": {"functions-only-wire"},
		mod + "pkg/s3mem":           {"functions-only-wire"},
	})
	inject("internal/base/sdkhttp/injected.go", "sdkhttp", map[string][]string{
		mod + "pkg/fifo": {"layer-base-imports-no-layer"},
	})
	// ids has a rule of its own too; both refuse.
	inject("internal/base/ids/injected.go", "ids", map[string][]string{
		mod + "pkg/task": {"helpers-import-only-the-standard-library", "layer-base-imports-no-layer"},
	})
	// An entry that is a bare prefix (service/dynamodb) would let a sibling
	// (service/dynamodbstreams) in: each entry ends in $ or /.
	// The lane engine knows no library of ours (the layer allows them).
	inject("pkg/lanes/injected.go", "lanes", map[string][]string{
		mod + "pkg/task": {"lanes-is-transport-neutral"},
	})
	inject("pkg/jobs/injected.go", "jobs", map[string][]string{
		"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams": {"jobs-imports-only-the-internal-helpers"},
	})
	// The driver lives in internal/base/, which the application's layer
	// allows: a store of the application that opened the database itself
	// would link it into every bootstrap, DynamoDB's too.
	inject("internal/app/projection/injected.go", "projection", map[string][]string{
		mod + "internal/base/pgwire": {"app-imports-no-driver"},
	})

	out, err = runDepguard(t, lint, dir)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "golangci-lint must refuse the injected imports; it said (%v):\n%s", err, out)
	var got []refusal
	for _, m := range regexp.MustCompile(`(?m)^(\S+\.go):\d+:\d+: import '([^']+)' is not allowed from list '([^']+)'(?:: .*)? \(depguard\)$`).FindAllStringSubmatch(out, -1) {
		got = append(got, refusal{filepath.ToSlash(m[1]), m[2], m[3]})
	}
	require.ElementsMatch(t, want, got, "golangci-lint said:\n%s", out)
}

func runDepguard(t *testing.T, lint, dir string) (string, error) {
	t.Helper()
	// Other runs of golangci-lint (make lint, a helper's) may be going on:
	// without --allow-parallel-runners this one would give up after 5 s.
	// Every refusal is shown: by default one issue per line (two rules
	// refusing one import) and three of the same text are.
	cmd := exec.CommandContext(t.Context(), lint, "run", "--allow-parallel-runners", "--enable-only", "depguard",
		"--uniq-by-line=false", "--max-issues-per-linter=0", "--max-same-issues=0", "--build-tags", "integration", "./...")
	cmd.Dir = dir
	// Everything the copy needs is in the module cache already: never
	// fetch.
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// lintEnv names the pinned golangci-lint's path: make sets it for the
// tests it runs (make unit, make integration), having installed the tool.
const lintEnv = "FIFOWORKER_GOLANGCI_LINT"

// golangciLint is the pinned golangci-lint: $FIFOWORKER_GOLANGCI_LINT, or
// where the Makefile installs it when that is not set (go test run by
// hand): $(CACHE)/bin/golangci-lint-$(GOLANGCI_LINT_VERSION), CACHE being
// $FIFOWORKER_CACHE or ~/.cache/fifoworker as in the Makefile, the version
// read from the Makefile so that the two cannot differ. Without it the
// test fails: it is the test of the import rules.
func golangciLint(t *testing.T) string {
	t.Helper()
	path := os.Getenv(lintEnv)
	if path == "" {
		makefile, err := os.ReadFile(filepath.Join(moduleRoot(t), "Makefile"))
		require.NoError(t, err)
		m := regexp.MustCompile(`(?m)^GOLANGCI_LINT_VERSION\s*:=\s*(\S+)$`).FindSubmatch(makefile)
		require.NotNil(t, m, "the Makefile names no GOLANGCI_LINT_VERSION")
		cache := os.Getenv("FIFOWORKER_CACHE")
		if cache == "" {
			home, err := os.UserHomeDir()
			require.NoError(t, err, "no home directory to find the Makefile's cache in; set %s", lintEnv)
			cache = filepath.Join(home, ".cache", "fifoworker")
		}
		path = filepath.Join(cache, "bin", "golangci-lint-"+string(m[1]))
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the pinned golangci-lint is needed and is not at %s (%v): run make tools (or make lint), which installs it, or set %s to its path (make unit and make integration install it and set it)", path, err, lintEnv)
	}
	return path
}

// copyTracked copies the files git tracks in root, and the new files it
// does not ignore (a file not yet added may be what the rest needs to
// build), as they are in the working tree, to dir.
func copyTracked(t *testing.T, root, dir string) {
	t.Helper()
	ls := exec.CommandContext(t.Context(), "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	out, err := ls.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("%w: %s", err, exit.Stderr)
	}
	require.NoError(t, err, "git ls-files in %s: this test copies the module's files as git lists them, so it runs in a git checkout", root)
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
}

// goList is the packages go list names for patterns in the module at root,
// with the integration build tag.
func goList(t *testing.T, root string, patterns ...string) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"list", "-tags", "integration"}, patterns...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("%w: %s", err, exit.Stderr)
	}
	require.NoError(t, err, "go list %v", patterns)
	return strings.Fields(string(out))
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
