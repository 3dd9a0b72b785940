// Package layers checks what of docs/ARCHITECTURE.md's layers depguard
// cannot, as depguard sees only a file's own imports and no test file.
//
// A library's promise covers its tests too, integration tests included. A
// team that takes pkg/jobs runs pkg/jobs's tests; they must not need this
// service's application, its wiring, its simulation, its CLI, its
// development tooling or another library's conformance helpers. And a
// deployed function must carry no test code, however deep. So Check asks
// the go command itself (go list -deps, with -test and the integration
// build tag for the libraries, with the Lambda build's flags for the
// functions) what a rule's packages reach, and holds it to the rule.
//
// The production code's rules stay depguard's (.golangci.yml): this package
// adds the rest, and its own tests show that both fail on an injected bad
// import.
package layers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
)

// Module is this repository's module path: the rules speak of its packages.
const Module = "github.com/fifoworker/fifoworker"

// Rule says which packages a set of packages (and, if Tests, their tests)
// may reach directly or through any dependency, in one build. It allows
// what MayReach names of the module, and each root its own library's tree
// (Own); the standard library and other modules are not its business,
// except for what Refuse names, which is refused wherever it is.
//
// MayReach and Refuse hold patterns as the go command reads them: "..."
// matches any string, and "p/..." matches p too; any other pattern matches
// exactly one package (Module+"/pkg/jobs" is not pkg/jobs/jobstest).
type Rule struct {
	// Name is how a violation names the rule.
	Name string
	// Patterns are the go list patterns, relative to the module's root,
	// naming the packages the rule holds ("./pkg/...").
	Patterns []string
	// Flags are go list's build flags ("-tags", "integration").
	Flags []string
	// Env is added to go list's environment (GOOS=linux).
	Env []string
	// Tests lists the patterns' tests too (go list -test): each test
	// package is a root, as its package is.
	Tests bool
	// MayReach are the module's packages the roots may reach.
	MayReach []string
	// Own, when set, is a directory of the module whose children are
	// libraries (Module+"/pkg"): a root in one of them, Own/lib or below,
	// may also reach Own/lib/..., its own conformance helpers included,
	// and no other library's that MayReach does not name.
	Own string
	// Refuse are packages, of any module, the roots may not reach even
	// where MayReach or Own would allow them.
	Refuse []string
	// Why is the reason, for the report.
	Why string
}

// Libraries holds the libraries and their tests, integration tests
// included: another team runs them.
var Libraries = Rule{
	Name:     "libraries-and-their-tests-reach-only-base-and-libraries",
	Patterns: []string{"./pkg/..."},
	Flags:    []string{"-tags", "integration"},
	Tests:    true,
	MayReach: append([]string{Module + "/internal/base/...", Module + "/pkg/localesm", Module + "/pkg/awstest", Module + "/pkg/s3mem", Module + "/pkg/lanes/lanestest", Module + "/pkg/pgtest"}, serviceLibraries...),
	Own:      Module + "/pkg",
	Why: "a library is imported by another team, who runs its tests: " +
		"they may use the base helpers, the libraries, their own conformance helpers and the tests' own libraries (pkg/awstest, pkg/s3mem, pkg/lanes/lanestest, pkg/pgtest), " +
		"never another library's conformance helpers, the service (internal/app, internal/lambdawire, internal/sim), the CLI (cmd) or the tooling (internal/dev)",
}

// Functions holds the five functions as the Lambda build builds them
// (internal/dev/pipeline's BuildFlags, for linux/arm64 as template.yaml
// deploys them, without cgo as BuildBootstraps builds them).
var Functions = Rule{
	Name:     "functions-build-reaches-no-test-code",
	Patterns: []string{"./functions/..."},
	Flags:    pipeline.BuildFlags,
	Env:      []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64"},
	MayReach: append([]string{Module + "/internal/lambdawire/...", Module + "/internal/app/...", Module + "/internal/base/..."}, serviceLibraries...),
	// Every test-support package of ours is named ...test (jobstest,
	// projectiontest, awstest); testify and porcupine are the conformance
	// suites' own.
	Refuse: []string{Module + "/...test", "github.com/stretchr/testify/...", "github.com/anishathalye/porcupine/..."},
	Why: "a deployed function runs the wiring, the application, the base helpers and the libraries' production packages, " +
		"never test code (testify, porcupine, pkg/awstest, pkg/s3mem, a conformance suite) or the tooling",
}

// serviceLibraries are the libraries' packages the service runs: not
// their tests' helpers, nor localesm, which runs functions locally.
var serviceLibraries = []string{
	Module + "/pkg/fifo", Module + "/pkg/lanes", Module + "/pkg/kafka", Module + "/pkg/jobs", Module + "/pkg/jobs/jobitem", Module + "/pkg/candidate", Module + "/pkg/quarantine", Module + "/pkg/task",
}

// Violation is one package of a rule (or one of its test packages) that
// reaches a package the rule does not allow.
type Violation struct {
	Rule string
	// From is the package or test package that reaches it, as go list
	// names it: "pkg/jobs_test [pkg/jobs.test]" is pkg/jobs's external
	// tests (the module's path left out).
	From string
	// Reaches is the package it may not reach, the module's path left out
	// and without the test binary it may be recompiled for
	// ("pkg/jobs/jobstest", "github.com/stretchr/testify/require").
	Reaches string
	// Via is the shortest import chain from From to Reaches, both
	// included.
	Via []string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s reaches %s (%s)", v.Rule, v.From, v.Reaches, strings.Join(v.Via, " -> "))
}

// ErrList is returned when go list fails or prints what Check cannot read.
var ErrList = errors.New("layers: go list")

// Package is what Check reads of one package go list prints.
type Package struct {
	ImportPath string
	// DepOnly is set for a package listed only as a dependency, not one
	// the patterns name (nor one of their test packages).
	DepOnly bool
	Imports []string
}

// Check lists, in the module at dir, the packages r.Patterns name (with
// their tests if r.Tests) and all they depend on, in r's build, and
// returns every violation of r. overlay, when not empty, is passed to go
// list -overlay: a test adds a file to a package that way without writing
// into the tree.
func Check(ctx context.Context, dir, overlay string, r Rule) ([]Violation, error) {
	pkgs, err := r.list(ctx, dir, overlay)
	if err != nil {
		return nil, err
	}
	return r.Violations(pkgs), nil
}

// list runs go list -deps on r's patterns in dir.
func (r Rule) list(ctx context.Context, dir, overlay string) ([]Package, error) {
	args := []string{"list", "-deps", "-json=ImportPath,DepOnly,Imports"}
	if r.Tests {
		args = append(args, "-test")
	}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	args = append(append(args, r.Flags...), r.Patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), r.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w %s in %s: %w: %s", ErrList, strings.Join(args[1:], " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	var pkgs []Package
	for dec := json.NewDecoder(&stdout); ; {
		var p Package
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: read its output: %w", ErrList, err)
		}
		pkgs = append(pkgs, p)
	}
}

// Violations returns, for each package the patterns named and each of
// their test packages (DepOnly false), the packages it reaches that r does
// not allow, with the shortest chain to each, in the order go list printed
// them. A test's generated main package ("p.test") is not a root: it
// reaches only the test packages, which are roots already.
func (r Rule) Violations(pkgs []Package) []Violation {
	byPath := make(map[string]Package, len(pkgs))
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	m := r.compile()
	var out []Violation
	for _, root := range pkgs {
		if root.DepOnly || strings.HasSuffix(root.ImportPath, ".test") {
			continue
		}
		for _, chain := range m.forbiddenFrom(root.ImportPath, byPath) {
			out = append(out, Violation{
				Rule: r.Name, From: short(root.ImportPath), Reaches: short(packagePath(chain[len(chain)-1])), Via: shortAll(chain),
			})
		}
	}
	return out
}

// matcher is a rule's patterns, compiled once for all its roots.
type matcher struct {
	own              string
	mayReach, refuse []*regexp.Regexp
}

func (r Rule) compile() matcher {
	return matcher{own: r.Own, mayReach: compileAll(r.MayReach), refuse: compileAll(r.Refuse)}
}

// forbiddenFrom walks the imports from root breadth first and returns the
// chain to each forbidden package it meets (root is the rule's: it is
// where the walk starts, not a package it reaches). It does not walk
// through a forbidden package: what lies behind it is that package's
// business.
func (m matcher) forbiddenFrom(root string, byPath map[string]Package) [][]string {
	own := m.ownLibrary(root)
	parent := map[string]string{root: ""}
	queue := []string{root}
	var chains [][]string
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		if at != root && !m.allowed(at, own) {
			chains = append(chains, chainTo(at, parent))
			continue
		}
		for _, imp := range byPath[at].Imports {
			if _, seen := parent[imp]; !seen {
				parent[imp] = at
				queue = append(queue, imp)
			}
		}
	}
	return chains
}

func chainTo(at string, parent map[string]string) []string {
	var chain []string
	for ; at != ""; at = parent[at] {
		chain = append(chain, at)
	}
	slices.Reverse(chain)
	return chain
}

// ownLibrary is the tree of the library root belongs to under the rule's
// Own (Own+"/jobs/..." for pkg/jobs/jobstest's tests), or nil if none.
func (m matcher) ownLibrary(root string) *regexp.Regexp {
	if m.own == "" {
		return nil
	}
	rest, ok := strings.CutPrefix(testedPackage(root), m.own+"/")
	if !ok {
		return nil
	}
	lib, _, _ := strings.Cut(rest, "/")
	return compilePattern(m.own + "/" + lib + "/...")
}

// allowed reports whether the rule lets a root whose library's tree is own
// reach importPath.
func (m matcher) allowed(importPath string, own *regexp.Regexp) bool {
	path := packagePath(importPath)
	if anyMatch(m.refuse, path) {
		return false
	}
	if path != Module && !strings.HasPrefix(path, Module+"/") {
		return true // the standard library, another module
	}
	return (own != nil && own.MatchString(path)) || anyMatch(m.mayReach, path)
}

func anyMatch(res []*regexp.Regexp, path string) bool {
	return slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(path) })
}

func compileAll(patterns []string) []*regexp.Regexp {
	res := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		res[i] = compilePattern(p)
	}
	return res
}

// compilePattern is the go command's pattern as a regular expression:
// "..." matches any string, and a pattern ending in "/..." matches what
// comes before it too.
func compilePattern(pattern string) *regexp.Regexp {
	re := strings.ReplaceAll(regexp.QuoteMeta(pattern), `\.\.\.`, `.*`)
	if t, ok := strings.CutSuffix(re, `/.*`); ok {
		re = t + `(/.*)?`
	}
	return regexp.MustCompile(`^` + re + `$`)
}

// testedPackage is the package a root belongs to: "p [q.test]", p
// recompiled for q's tests, is p, and an external test package "p_test"
// (only a root: nothing imports it but its test's main package) is p's.
func testedPackage(importPath string) string {
	return strings.TrimSuffix(packagePath(importPath), "_test")
}

// packagePath is the package a go list import path names: "p [q.test]",
// p recompiled for q's tests, is p.
func packagePath(importPath string) string {
	path, _, _ := strings.Cut(importPath, " ")
	return path
}

func short(importPath string) string {
	return strings.ReplaceAll(importPath, Module+"/", "")
}

func shortAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = short(p)
	}
	return out
}
