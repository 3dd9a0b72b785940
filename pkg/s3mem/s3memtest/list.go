package s3memtest

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"
)

// putAll stores each key with its own name as its content.
func (b *bundle) putAll(t *testing.T, keys ...string) {
	t.Helper()
	for _, k := range keys {
		b.put(t, k, k)
	}
}

// requirePage checks what every page of a listing says of itself: it
// repeats the request's bucket, prefix, start and token, counts its keys,
// and names a next token exactly when it is truncated.
func requirePage(t *testing.T, b *bundle, in *s3.ListObjectsV2Input, out *s3.ListObjectsV2Output) {
	t.Helper()
	require.Equal(t, b.Name, aws.ToString(out.Name))
	require.Equal(t, aws.ToString(in.Prefix), aws.ToString(out.Prefix))
	require.Equal(t, aws.ToString(in.StartAfter), aws.ToString(out.StartAfter))
	require.Equal(t, aws.ToString(in.ContinuationToken), aws.ToString(out.ContinuationToken))
	require.Equal(t, int32(len(out.Contents)), aws.ToInt32(out.KeyCount)) //nolint:gosec // at most 1,000
	token := aws.ToString(out.NextContinuationToken)
	if b.deviates(FullPageNamesANextToken) && len(out.Contents) == int(aws.ToInt32(out.MaxKeys)) {
		require.NotEmpty(t, token, "a full page")
		return
	}
	require.Equal(t, aws.ToBool(out.IsTruncated), token != "", "IsTruncated %v with next token %q", aws.ToBool(out.IsTruncated), token)
}

// requireListed fails the test unless a listing's entry has the
// LastModified HeadObject gives and the STANDARD storage class.
func (b *bundle) requireListed(t *testing.T, head *time.Time, o types.Object) {
	t.Helper()
	key, got := aws.ToString(o.Key), aws.ToTime(o.LastModified)
	if b.deviates(ListEntriesLoose) {
		got = got.Truncate(time.Second)
		require.Empty(t, o.StorageClass, key)
	} else {
		require.Equal(t, types.ObjectStorageClassStandard, o.StorageClass, key)
	}
	require.True(t, aws.ToTime(head).Equal(got), "%s: the listing says %v, HeadObject %v", key, aws.ToTime(o.LastModified), aws.ToTime(head))
}

// A listing walks the keys under its prefix in UTF-8 byte order (AWS's
// ListObjectsV2 reference: lexicographical order of the key names, for a
// general purpose bucket): upper case before lower, a key before the keys
// it is a prefix of, multi-byte characters last. It goes MaxKeys at a
// time, each key once; each entry has the object's size, ETag,
// LastModified and the STANDARD storage class.
func testListWalks(t *testing.T, b *bundle) {
	want := []string{"p/a", "p/é", "p/Z", "p/a-", "p/a/b", "p/z", "p/日本"}
	b.putAll(t, want...)
	b.putAll(t, "p", "o/x", "q/a", "P/a")
	slices.Sort(want) // Go compares strings byte by byte, as S3 orders keys

	var got []string
	in := &s3.ListObjectsV2Input{Prefix: aws.String("p/"), MaxKeys: aws.Int32(2)}
	for pages := 1; ; pages++ {
		require.LessOrEqual(t, pages, 4, "more pages than keys/MaxKeys")
		out := b.list(t, in)
		requirePage(t, b, in, out)
		require.Equal(t, int32(2), aws.ToInt32(out.MaxKeys))
		require.Len(t, out.Contents, min(2, len(want)-len(got)))
		for _, o := range out.Contents {
			key := aws.ToString(o.Key)
			head := b.head(t, key)
			require.Equal(t, int64(len(key)), aws.ToInt64(o.Size), key)
			require.Equal(t, etag(key), aws.ToString(o.ETag), key)
			b.requireListed(t, head.LastModified, o)
		}
		got = append(got, keysOf(out)...)
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.ContinuationToken = out.NextContinuationToken
	}
	require.Equal(t, want, got)
	require.Equal(t, want, b.keys(t, "p/"), "listed a page at a time by default")
}

// A page that holds exactly MaxKeys keys and ends the listing of its
// prefix is not truncated, whatever follows the prefix in the bucket; one
// key more under the prefix and it is. An empty token is no token.
func testListExactPage(t *testing.T, b *bundle) {
	b.putAll(t, "p/a", "p/b", "p/c", "q")
	in := &s3.ListObjectsV2Input{Prefix: aws.String("p/"), MaxKeys: aws.Int32(3), ContinuationToken: aws.String("")}
	out := b.list(t, in)
	requirePage(t, b, in, out)
	require.Equal(t, []string{"p/a", "p/b", "p/c"}, keysOf(out))
	if b.deviates(FullPageNamesANextToken) {
		require.True(t, aws.ToBool(out.IsTruncated), "q follows")
		in.ContinuationToken = out.NextContinuationToken
		out = b.list(t, in)
		requirePage(t, b, in, out)
		require.Empty(t, out.Contents)
	}
	require.False(t, aws.ToBool(out.IsTruncated))

	in = &s3.ListObjectsV2Input{Prefix: aws.String("p/"), MaxKeys: aws.Int32(2)}
	out = b.list(t, in)
	requirePage(t, b, in, out)
	require.Equal(t, []string{"p/a", "p/b"}, keysOf(out))
	require.True(t, aws.ToBool(out.IsTruncated))
	in.ContinuationToken = out.NextContinuationToken
	out = b.list(t, in)
	requirePage(t, b, in, out)
	require.Equal(t, []string{"p/c"}, keysOf(out))
	require.False(t, aws.ToBool(out.IsTruncated))
}

// An empty bucket, or a prefix nothing is under, lists no key and is not
// truncated; the page size is the default, 1,000.
func testListEmpty(t *testing.T, b *bundle) {
	for _, prefix := range []string{"", "none/"} {
		in := &s3.ListObjectsV2Input{Prefix: aws.String(prefix)}
		out := b.list(t, in)
		requirePage(t, b, in, out)
		require.Empty(t, out.Contents)
		require.False(t, aws.ToBool(out.IsTruncated))
		require.Equal(t, int32(1000), aws.ToInt32(out.MaxKeys))
		b.put(t, "k", "x")
	}
}

// StartAfter may be any string: the listing starts after it, without it,
// whether or not a key has that name, and within the prefix.
func testListStartAfter(t *testing.T, b *bundle) {
	b.putAll(t, "a", "b", "c", "d", "p/a", "p/b")
	for _, tc := range []struct {
		prefix, after string
		want          []string
	}{
		{"", "b", []string{"c", "d", "p/a", "p/b"}},
		{"", "bb", []string{"c", "d", "p/a", "p/b"}},
		{"", "p/b", nil},
		{"", "zzz", nil},
		{"p/", "a", []string{"p/a", "p/b"}},
		{"p/", "p/a", []string{"p/b"}},
	} {
		in := &s3.ListObjectsV2Input{Prefix: aws.String(tc.prefix), StartAfter: aws.String(tc.after)}
		out := b.list(t, in)
		requirePage(t, b, in, out)
		require.Equal(t, tc.want, nilIfEmpty(keysOf(out)), "prefix %q after %q", tc.prefix, tc.after)
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// A continuation token sent with StartAfter, as the SDK's paginator sends
// every page after the first, goes on where the previous page ended, and
// the answer repeats both (ceph/s3-tests'
// test_bucket_listv2_both_continuationtoken_startafter, which S3 passes).
func testListTokenAndStartAfter(t *testing.T, b *bundle) {
	b.putAll(t, "bar", "baz", "foo", "quxx")
	in := &s3.ListObjectsV2Input{StartAfter: aws.String("bar"), MaxKeys: aws.Int32(1)}
	out := b.list(t, in)
	requirePage(t, b, in, out)
	require.Equal(t, []string{"baz"}, keysOf(out))

	in = &s3.ListObjectsV2Input{StartAfter: aws.String("bar"), ContinuationToken: out.NextContinuationToken}
	out = b.list(t, in)
	requirePage(t, b, in, out)
	require.Equal(t, []string{"foo", "quxx"}, keysOf(out))
	require.False(t, aws.ToBool(out.IsTruncated))
}
