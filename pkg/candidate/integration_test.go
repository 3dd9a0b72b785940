//go:build integration

package candidate_test

import (
	"bytes"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/candidate"
)

// TestIntegrationStore runs the store's conformance tests
// (conformance_test.go) on the emulator.
func TestIntegrationStore(t *testing.T) {
	t.Parallel()
	for _, c := range storeConformance {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, setupIntegration(t))
		})
	}
}

// setupIntegration creates a bucket of the test's own on the configured
// endpoint and removes it, with its objects, at the end.
func setupIntegration(t *testing.T) *s3Bundle {
	t.Helper()
	// awstest's client closes its idle connections when the test ends
	// (that cleanup, registered first, runs last), so goleak still sees a
	// response body left open.
	client := awstest.S3(t)
	b := &s3Bundle{client: client, bucket: awstest.Bucket(t, client, "cand"), spoolDir: t.TempDir()}
	b.put = func(t *testing.T, key string, body []byte, meta map[string]string, checksum string) {
		t.Helper()
		in := &s3.PutObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key), Body: bytes.NewReader(body), Metadata: meta}
		if checksum != "" {
			in.ChecksumSHA256 = aws.String(checksum)
		}
		_, err := client.PutObject(t.Context(), in)
		require.NoError(t, err)
	}
	var err error
	b.store, err = candidate.New(candidate.Config{Client: client, Bucket: b.bucket, SpoolDir: b.spoolDir})
	require.NoError(t, err)
	return b
}

// TestIntegrationListPastOnePage lists a job of more candidates than
// one page of the emulator holds (listjob_test.go).
func TestIntegrationListPastOnePage(t *testing.T) {
	t.Parallel()
	testListPastOnePage(t, setupIntegration(t))
}
