//go:build integration

package candidate_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
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
	b := &s3Bundle{client: client, bucket: awstest.Name(t, "cand"), spoolDir: t.TempDir()}
	in := &s3.CreateBucketInput{Bucket: aws.String(b.bucket)}
	if region := awstest.Config(t).Region; region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(region)}
	}
	_, err := client.CreateBucket(t.Context(), in)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background() // t.Context() has ended by now
		pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				t.Errorf("cleanup: list %s: %v", b.bucket, err)
				return
			}
			for _, obj := range page.Contents {
				if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: obj.Key}); err != nil {
					t.Errorf("cleanup: delete %s: %v", aws.ToString(obj.Key), err)
				}
			}
		}
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b.bucket)}); err != nil {
			t.Errorf("cleanup: delete bucket %s: %v", b.bucket, err)
		}
	})
	b.put = func(t *testing.T, key string, body []byte, meta map[string]string, checksum string) {
		t.Helper()
		in := &s3.PutObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key), Body: bytes.NewReader(body), Metadata: meta}
		if checksum != "" {
			in.ChecksumSHA256 = aws.String(checksum)
		}
		_, err := client.PutObject(t.Context(), in)
		require.NoError(t, err)
	}
	b.store, err = candidate.New(candidate.Config{Client: client, Bucket: b.bucket, SpoolDir: b.spoolDir})
	require.NoError(t, err)
	return b
}
