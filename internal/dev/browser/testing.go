package browser

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvArtefacts names the directory the browser tests write their
// screenshots to (make test sets it to .artefacts/, which CI keeps).
const EnvArtefacts = "FIFOWORKER_ARTEFACTS"

// Artefacts is the directory a test writes its screenshots to: name under
// EnvArtefacts when it is set, else under the test's temporary directory;
// logged either way, so a failed run says where to look.
func Artefacts(t testing.TB, name string) string {
	t.Helper()
	root := os.Getenv(EnvArtefacts)
	if root == "" {
		root = t.TempDir()
	}
	dir, err := filepath.Abs(filepath.Join(root, name))
	if err != nil {
		t.Fatalf("browser: artefacts directory: %v", err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// Start starts a browser for t whose screenshots go to artefacts, and
// closes it when t ends. A browser that cannot start fails t with the
// reason: a browser test never skips, so a machine without Chromium cannot
// pass it by running nothing.
func Start(t testing.TB, artefacts string) *Browser {
	t.Helper()
	b, err := New(Config{Artefacts: artefacts})
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return b
}
