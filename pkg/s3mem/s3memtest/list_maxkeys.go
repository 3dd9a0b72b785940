package s3memtest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
)

// MaxKeys 0 asks for no key, and S3 answers with none and a listing that
// is not truncated, so it names no next token (ceph/s3-tests'
// test_bucket_listv2_maxkeys_zero, which S3 passes; AWS's reference says
// nothing of 0).
func testListMaxKeysZero(t *testing.T, b *bundle) {
	b.putAll(t, "a", "b")
	in := &s3.ListObjectsV2Input{MaxKeys: aws.Int32(0)}
	out := b.list(t, in)
	if b.deviates(MaxKeysBelowOneIgnored) {
		require.Equal(t, []string{"a", "b"}, keysOf(out))
		return
	}
	requirePage(t, b, in, out)
	require.Empty(t, out.Contents)
	require.False(t, aws.ToBool(out.IsTruncated))
	require.Equal(t, int32(0), aws.ToInt32(out.MaxKeys))
}

// A negative MaxKeys is refused with 400 InvalidArgument ("Argument
// maxKeys must be an integer between 0 and 2147483647", as S3 answers
// ceph/s3-tests and S3-compatible servers' checks against it).
func testListMaxKeysNegative(t *testing.T, b *bundle) {
	b.putAll(t, "a")
	_, err := b.Client.ListObjectsV2(b.ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b.Name), MaxKeys: aws.Int32(-1)})
	if b.deviates(MaxKeysBelowOneIgnored) {
		require.NoError(t, err)
		return
	}
	require.Equal(t, "InvalidArgument", code(err), "%v", err)
}

// A page holds at most 1,000 keys, whatever MaxKeys asks (AWS's
// ListObjectsV2 reference: "By default the action returns up to 1,000
// key names", and no more); 1,000 is also the page size when MaxKeys is
// not given.
func testListCap(t *testing.T, b *bundle) {
	const n = 1001
	keys := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for k := range keys {
				b.put(t, k, k)
			}
		})
	}
	for i := range n {
		keys <- fmt.Sprintf("k/%04d", i)
	}
	close(keys)
	wg.Wait()

	for _, tc := range []struct {
		maxKeys *int32
		want    int
	}{
		{nil, 1000}, {aws.Int32(999), 999}, {aws.Int32(1000), 1000}, {aws.Int32(1001), 1000}, {aws.Int32(5000), 1000},
	} {
		in := &s3.ListObjectsV2Input{MaxKeys: tc.maxKeys}
		out := b.list(t, in)
		requirePage(t, b, in, out)
		require.Len(t, out.Contents, tc.want, "MaxKeys %v", aws.ToInt32(tc.maxKeys))
		require.True(t, aws.ToBool(out.IsTruncated))
		require.Equal(t, fmt.Sprintf("k/%04d", tc.want-1), aws.ToString(out.Contents[tc.want-1].Key))
		if tc.maxKeys == nil {
			require.Equal(t, int32(1000), aws.ToInt32(out.MaxKeys))
		}
		in = &s3.ListObjectsV2Input{MaxKeys: tc.maxKeys, ContinuationToken: out.NextContinuationToken}
		out = b.list(t, in)
		requirePage(t, b, in, out)
		require.Len(t, out.Contents, n-tc.want)
		require.False(t, aws.ToBool(out.IsTruncated))
	}
	require.Len(t, b.keys(t, "k/"), n)
}
