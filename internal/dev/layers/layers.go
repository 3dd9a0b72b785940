// Package layers checks the import rule of docs/ARCHITECTURE.md's layers
// that depguard cannot: depguard reads no test file, but a library's promise
// covers its tests too, integration tests included. A team that takes
// pkg/jobs runs pkg/jobs's tests; they must not need this service's
// application, its wiring, its simulation, its CLI or its development
// tooling. So Check asks the go command itself (go list -deps -test, with
// the integration build tag) what the libraries and their tests reach, and
// holds it to an allow list of the module's own packages.
//
// The production code's rules stay depguard's (.golangci.yml): this package
// adds the tests' half, and its own tests show that both fail on an
// injected bad import.
package layers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Module is this repository's module path: the rules speak of its packages.
const Module = "github.com/fifoworker/fifoworker"

// Rule says which of the module's packages a set of packages, their tests
// included, may reach directly or through any dependency. The standard
// library and other modules are not the rule's business.
type Rule struct {
	// Name is how a violation names the rule.
	Name string
	// Patterns are the go list patterns, relative to the module's root,
	// naming the packages the rule holds ("./pkg/...").
	Patterns []string
	// MayReach are the trees of the module those packages may reach: a
	// path allows itself and every package below it
	// (Module+"/internal/base" allows internal/base/ids, not
	// internal/basement).
	MayReach []string
	// Why is the reason, for the report.
	Why string
}

// Rules are the rules Check's test holds the tree to.
var Rules = []Rule{{
	Name:     "libraries-and-their-tests-reach-only-base-and-libraries",
	Patterns: []string{"./pkg/..."},
	MayReach: []string{Module + "/internal/base", Module + "/pkg"},
	Why: "a library is imported by another team, who runs its tests: " +
		"they may use the base helpers and the libraries (conformance helpers included), " +
		"never the service (internal/app, internal/lambdawire, internal/sim), the CLI (cmd) or the tooling (internal/dev)",
}}

// Violation is one package of a rule (or one of its test packages) that
// reaches a package of the module the rule does not allow.
type Violation struct {
	Rule string
	// From is the package or test package that reaches it, as go list
	// names it: "pkg/jobs_test [pkg/jobs.test]" is pkg/jobs's external
	// tests (the module's path left out).
	From string
	// Reaches is the package it may not reach, the module's path left out
	// (and the test binary it is recompiled for, if any).
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

// Check lists, in the module at dir, the packages r.Patterns name with
// their tests (files tagged integration included) and all they depend on,
// and returns every violation of r. overlay, when not empty, is passed to
// go list -overlay: a test adds a file to a package that way without
// writing into the tree.
func Check(ctx context.Context, dir, overlay string, r Rule) ([]Violation, error) {
	pkgs, err := List(ctx, dir, overlay, r.Patterns...)
	if err != nil {
		return nil, err
	}
	return r.Violations(pkgs), nil
}

// List runs go list -deps -test -tags integration on patterns in dir.
func List(ctx context.Context, dir, overlay string, patterns ...string) ([]Package, error) {
	args := []string{"list", "-deps", "-test", "-tags", "integration", "-json=ImportPath,DepOnly,Imports"}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, patterns...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w %s in %s: %w: %s", ErrList, strings.Join(patterns, " "), dir, err, strings.TrimSpace(stderr.String()))
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
// their test packages (DepOnly false), the module's packages it reaches
// that r does not allow, with the shortest chain to each, in the order go
// list printed them. A test's generated main package ("p.test") is not a
// root: it reaches only the test packages, which are roots already.
func (r Rule) Violations(pkgs []Package) []Violation {
	byPath := make(map[string]Package, len(pkgs))
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	var out []Violation
	for _, root := range pkgs {
		if root.DepOnly || strings.HasSuffix(root.ImportPath, ".test") {
			continue
		}
		for _, chain := range r.forbiddenFrom(root.ImportPath, byPath) {
			out = append(out, Violation{
				Rule: r.Name, From: short(root.ImportPath), Reaches: short(packagePath(chain[len(chain)-1])), Via: shortAll(chain),
			})
		}
	}
	return out
}

// forbiddenFrom walks the imports from root breadth first and returns the
// chain to each forbidden package it meets. It does not walk through a
// forbidden package: what lies behind it is that package's business.
func (r Rule) forbiddenFrom(root string, byPath map[string]Package) [][]string {
	parent := map[string]string{root: ""}
	queue := []string{root}
	var chains [][]string
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		if !r.allowed(at) {
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

// allowed reports whether the rule lets its packages reach importPath
// (a test variant, "p [q.test]", is p).
func (r Rule) allowed(importPath string) bool {
	path := packagePath(importPath)
	if path != Module && !strings.HasPrefix(path, Module+"/") {
		return true // the standard library, another module
	}
	// A test's generated main package ("pkg/jobs.test") and its external
	// test package ("pkg/jobs_test") belong to the package they test.
	path = strings.TrimSuffix(strings.TrimSuffix(path, ".test"), "_test")
	for _, tree := range r.MayReach {
		if path == tree || strings.HasPrefix(path, tree+"/") {
			return true
		}
	}
	return false
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
