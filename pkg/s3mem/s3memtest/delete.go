package s3memtest

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
)

// DeleteObject removes the object; deleting a key that holds nothing, now
// or ever, succeeds (AWS's DeleteObject reference: S3 answers a delete of
// a missing key in an unversioned bucket with success).
func testDelete(t *testing.T, b *bundle) {
	b.put(t, "a", "1")
	b.put(t, "b", "2")
	for _, key := range []string{"a", "a", "never"} {
		_, err := b.Client.DeleteObject(b.ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
		require.NoError(t, err, "delete %s", key)
	}
	b.requireState(t, map[string]string{"b": "2"})
}
