package s3memtest

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"
)

// A key that holds nothing is NoSuchKey to GetObject and NotFound to
// HeadObject (whose answer has no body to carry a code), whatever its
// neighbours hold.
func testMissingKey(t *testing.T, b *bundle) {
	b.put(t, "a/b", "x")
	b.put(t, "ab", "x")
	for _, key := range []string{"a", "a/", "a/b/", "A/b", "zzz"} {
		_, err := b.Client.GetObject(b.ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
		require.ErrorAs(t, err, new(*types.NoSuchKey), "get %s", key)
		_, err = b.Client.HeadObject(b.ctx, &s3.HeadObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
		require.ErrorAs(t, err, new(*types.NotFound), "head %s", key)
	}
}

// clockSlack is how far the server's clock may be from this process's:
// none for an emulator on this machine, a little for S3.
const clockSlack = time.Minute

// An object's LastModified is when it was put, in whole seconds (S3
// reports no finer), and HeadObject, GetObject and a listing agree on it.
func testLastModified(t *testing.T, b *bundle) {
	before := time.Now()
	b.put(t, "k", "x")
	after := time.Now()

	lm := aws.ToTime(b.head(t, "k").LastModified)
	require.True(t, lm.Equal(lm.Truncate(time.Second)), "LastModified %v is not a whole second", lm)
	require.False(t, lm.Before(before.Truncate(time.Second).Add(-clockSlack)), "LastModified %v is before the put (%v)", lm, before)
	require.False(t, lm.After(after.Add(clockSlack)), "LastModified %v is after the put (%v)", lm, after)

	got, err := b.Client.GetObject(b.ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String("k")})
	require.NoError(t, err)
	readAll(t, got.Body)
	require.True(t, lm.Equal(aws.ToTime(got.LastModified)), "get says %v, head %v", got.LastModified, lm)
	listed := b.list(t, &s3.ListObjectsV2Input{})
	require.Len(t, listed.Contents, 1)
	b.requireListed(t, &lm, listed.Contents[0])
}
