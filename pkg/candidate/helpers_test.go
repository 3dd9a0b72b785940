package candidate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fifoworker/fifoworker/pkg/candidate"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type testBundle struct {
	bucket   *bucket
	store    *candidate.Store
	spoolDir string
}

// setup returns a store on a test bucket (bucket_test.go), spooling into
// a directory of its own so that spool files can be counted. Conflict
// retries wait a nanosecond.
func setup(t *testing.T) *testBundle {
	t.Helper()
	return setupWith(t, candidate.Config{})
}

// setupWith is setup with cfg's settings; its Client, Bucket and SpoolDir
// are the bundle's, and a zero ConflictBackoff is a nanosecond.
func setupWith(t *testing.T, cfg candidate.Config) *testBundle {
	t.Helper()
	b := &testBundle{bucket: newBucket(t), spoolDir: t.TempDir()}
	cfg.Client, cfg.Bucket, cfg.SpoolDir = b.bucket, testBucket, b.spoolDir
	if cfg.ConflictBackoff == 0 {
		cfg.ConflictBackoff = time.Nanosecond
	}
	var err error
	b.store, err = candidate.New(cfg)
	require.NoError(t, err)
	return b
}

func mustKey(t testing.TB, job string, generation int64, attempt, ext string) candidate.Key {
	t.Helper()
	k, err := candidate.NewKey(job, generation, attempt, ext)
	require.NoError(t, err)
	return k
}

// spools returns the spool files of dir that still exist or that this
// process still holds open. A spool is unlinked as soon as it is created
// where the system allows it, so on Linux the open descriptors
// (/proc/self/fd) are what show a spool that was not cleaned up.
func spools(t testing.TB, dir string) []string {
	t.Helper()
	var found []string
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		found = append(found, filepath.Join(dir, e.Name()))
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return found // no procfs: only the directory can be checked
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			found = append(found, target+" (open)")
		}
	}
	return found
}

func requireNoSpools(t testing.TB, dir string) {
	t.Helper()
	require.Empty(t, spools(t, dir), "a spool file was left behind")
}

// createAndWrite starts a candidate and writes content, checking that the
// spool exists meanwhile: proof that requireNoSpools can see one.
func (b *testBundle) createAndWrite(ctx context.Context, t *testing.T, key candidate.Key, content []byte) *candidate.Writer {
	t.Helper()
	w, err := b.store.Create(ctx, key)
	require.NoError(t, err)
	_, err = w.Write(content)
	require.NoError(t, err)
	require.Len(t, spools(t, b.spoolDir), 1, "the spool should exist while writing")
	return w
}
