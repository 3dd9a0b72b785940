package pgserver

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fifoworker/fifoworker/internal/dev/localstack"
)

func systemIdentifier(t *testing.T, s *Server) uint64 {
	t.Helper()
	var id uint64
	queryRow(t, s, "SELECT system_identifier FROM pg_control_system()", &id)
	return id
}

// A new data directory is a copy of the cached template cluster: two
// servers started on new directories share initdb's system identifier,
// which initdb draws afresh each time it runs, as it does with NoTemplate.
// The copy holds a cluster, not the template's completion mark.
func TestANewDataDirIsACopyOfTheTemplate(t *testing.T) {
	first, second := start(t, Config{DataDir: testDataDir(t)}), start(t, Config{DataDir: testDataDir(t)})
	if a, b := systemIdentifier(t, first), systemIdentifier(t, second); a != b {
		t.Fatalf("system identifiers %d and %d differ: a new data dir was not a copy of the template", a, b)
	}
	if v := version(t, second); !strings.HasPrefix(v, "PostgreSQL 18.") {
		t.Fatalf("version() = %q", v)
	}
	if _, err := os.Stat(filepath.Join(second.DataDir(), ".complete")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the copy's .complete: %v, want none", err)
	}
	template := templateDir(localstack.DefaultCacheDir())
	if _, err := os.Stat(filepath.Join(template, "PG_VERSION")); err != nil {
		t.Fatalf("the template %s: %v", template, err)
	}
	fresh := start(t, Config{DataDir: testDataDir(t), NoTemplate: true})
	if systemIdentifier(t, fresh) == systemIdentifier(t, first) {
		t.Fatal("with NoTemplate the cluster shares the template's system identifier: initdb did not run")
	}
}

// The template is keyed by the pinned packages and by initdb's arguments:
// another pin, or another way of making the cluster, is another template.
func TestTheTemplateIsKeyedByThePinAndInitdbsArguments(t *testing.T) {
	key := templateKey(npmPackageLock, initdbArgs)
	if templateKey(append([]byte("x"), npmPackageLock...), initdbArgs) == key {
		t.Error("another lock file, the same template")
	}
	if templateKey(npmPackageLock, append([]string{"-k"}, initdbArgs...)) == key {
		t.Error("other initdb arguments, the same template")
	}
	if got := templateDir("/c"); got != filepath.Join("/c", "pgserver", "template-"+key) {
		t.Errorf("templateDir = %s", got)
	}
}

// A template whose initdb was interrupted is never left where a Start
// would take it for complete, and the next Start makes it afresh.
func TestATemplateInterruptedHalfwayIsNeverUsed(t *testing.T) {
	root, err := Install(t.Context(), localstack.DefaultCacheDir(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := credential("nobody")
	if err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		if root, err = reachableCopy(root); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "template")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go cancelOnceAClusterAppears(filepath.Join(os.TempDir(), "fifoworker-pgtemplate-*", "*", "PG_VERSION"), cancel, done)
	_, err = makeTemplate(ctx, root, dir, cred)
	close(done)
	cancel()
	if err == nil {
		t.Fatal("makeTemplate finished before initdb was interrupted; the test did not interrupt it")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the interrupted template %s: %v, want none", dir, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".install-*")); len(leftovers) != 0 {
		t.Fatalf("scratch left: %v", leftovers)
	}
	got, err := makeTemplate(t.Context(), root, dir, cred)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(got, "PG_VERSION")); err != nil {
		t.Fatalf("the template made after the interrupted one: %v", err)
	}
}

// BenchmarkStart: a server on a new data directory, from Start until it
// accepts connections, with the cluster copied from the template or made
// by initdb; Stop is outside the timing.
func BenchmarkStart(b *testing.B) {
	parent, err := os.MkdirTemp("", "pgserver-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil { // for the server's user, as root
		b.Fatal(err)
	}
	// Installs and makes the template outside the timing.
	warm, err := Start(b.Context(), Config{DataDir: filepath.Join(parent, "warm")})
	if err != nil {
		b.Fatal(err)
	}
	if err := warm.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name       string
		noTemplate bool
	}{{"template", false}, {"initdb", true}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				dir, err := os.MkdirTemp(parent, bc.name+"-") // new, empty
				if err != nil {
					b.Fatal(err)
				}
				s, err := Start(b.Context(), Config{NoTemplate: bc.noTemplate, DataDir: dir})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := s.Stop(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
