package s3memtest

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"
)

// calls makes one request of each operation on bucket, each writing or
// reading key (the listing lists the bucket), and returns their errors by
// operation.
func (b *bundle) calls(ctx context.Context, bucket, key string) map[string]error {
	errs := map[string]error{}
	_, errs["PutObject"] = b.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("new")})
	out, err := b.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err == nil {
		_ = out.Body.Close()
	}
	errs["GetObject"] = err
	_, errs["HeadObject"] = b.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	_, errs["ListObjectsV2"] = b.Client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	_, errs["DeleteObject"] = b.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	return errs
}

// Every operation on a bucket that does not exist is refused with
// NoSuchBucket, but for HeadObject: its 404 answer has no body to carry a
// code, so the SDK makes it NotFound, as for a missing key. The bucket
// under test is left alone.
func testMissingBucket(t *testing.T, b *bundle) {
	b.put(t, "k", "old")
	for op, err := range b.calls(b.ctx, b.Name+"-missing", "k") {
		if op == "HeadObject" {
			require.ErrorAs(t, err, new(*types.NotFound), "%s: %v", op, err)
			continue
		}
		require.Equal(t, "NoSuchBucket", code(err), "%s: %v", op, err)
	}
	b.requireState(t, map[string]string{"k": "old"})
}

// A request whose context has ended fails with the context's error and
// changes nothing.
func testCancelled(t *testing.T, b *bundle) {
	b.put(t, "k", "old")
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	for op, err := range b.calls(ctx, b.Name, "k") {
		require.ErrorIs(t, err, context.Canceled, op)
	}
	b.requireState(t, map[string]string{"k": "old"})
}
