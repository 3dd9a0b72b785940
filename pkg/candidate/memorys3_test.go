package candidate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// The in-memory S3 serves a store wherever an *s3.Client would.
var (
	_ candidate.S3API = (*s3mem.S3)(nil)
	_ candidate.S3API = (*s3mem.FaultyS3)(nil)
)

// TestMemoryS3Conformance runs the store's conformance tests
// (conformance_test.go), which TestIntegrationStore runs on the emulator,
// on s3mem.S3, the in-memory S3.
func TestMemoryS3Conformance(t *testing.T) {
	t.Parallel()
	for _, c := range storeConformance {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, setupMemoryS3(t))
		})
	}
}

func setupMemoryS3(t *testing.T) *s3Bundle {
	t.Helper()
	const bucket = "candidates-conformance"
	mem, err := s3mem.New(s3mem.Config{Buckets: []string{bucket}})
	require.NoError(t, err)
	b := &s3Bundle{client: mem, bucket: bucket, spoolDir: t.TempDir()}
	b.put = func(t *testing.T, key string, body []byte, meta map[string]string, checksum string) {
		t.Helper()
		require.NoError(t, mem.PutRaw(bucket, key, body, meta, checksum))
	}
	b.store, err = candidate.New(candidate.Config{Client: mem, Bucket: bucket, SpoolDir: b.spoolDir})
	require.NoError(t, err)
	return b
}
