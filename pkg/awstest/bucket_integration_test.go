//go:build integration

package awstest_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// Bucket creates a bucket of the test's own and, when the test ends,
// deletes it with the objects it holds.
func TestBucketIsCreatedAndDeletedWithItsObjectsAtCleanup(t *testing.T) {
	t.Parallel()
	client := awstest.S3(t)
	var name string
	t.Run("creates", func(t *testing.T) {
		name = awstest.Bucket(t, client, "bucket")
		require.True(t, strings.HasPrefix(name, "bucket-"), name)
		for _, k := range []string{"a", "b/c"} {
			_, err := client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String(k), Body: strings.NewReader(k)})
			require.NoError(t, err)
		}
	})
	_, err := client.HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: aws.String(name)})
	require.ErrorAs(t, err, new(*types.NotFound), "the bucket is deleted when its test ends")
}
