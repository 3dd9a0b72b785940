package s3memtest

import (
	"crypto/md5" //nolint:gosec // S3's ETag of a single-part object is the MD5 of its content
	"encoding/hex"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"
)

// etag is S3's ETag of a single-part object: the quoted hex MD5 of its
// content.
func etag(body string) string {
	sum := md5.Sum([]byte(body)) //nolint:gosec // see the import
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// A put stores the body, its Content-Type and its user metadata; GetObject
// and HeadObject return them, the metadata's keys in lower case (S3 keeps
// them so, and the SDK lower-cases what it reads). A put without a
// ContentType stores application/octet-stream: the SDK sends that when
// the input has none (S3's own default, binary/octet-stream, is for a
// request without the header, which the SDK does not make).
func testPutStores(t *testing.T, b *bundle) {
	const body = `{"articles":120}`
	out := b.put(t, "docs/a.json", body, func(in *s3.PutObjectInput) {
		in.ContentType = aws.String("application/json")
		in.ContentLength = aws.Int64(int64(len(body)))
		in.Metadata = map[string]string{"Job-Id": "job-42", "sha256": "abc"}
	})
	require.Equal(t, etag(body), aws.ToString(out.ETag))

	wantMeta := map[string]string{"job-id": "job-42", "sha256": "abc"}
	got, err := b.Client.GetObject(b.ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String("docs/a.json")})
	require.NoError(t, err)
	require.Equal(t, body, readAll(t, got.Body))
	require.Equal(t, int64(len(body)), aws.ToInt64(got.ContentLength))
	require.Equal(t, "application/json", aws.ToString(got.ContentType))
	require.Equal(t, etag(body), aws.ToString(got.ETag))
	require.Equal(t, wantMeta, got.Metadata)

	head := b.head(t, "docs/a.json")
	require.Equal(t, int64(len(body)), aws.ToInt64(head.ContentLength))
	require.Equal(t, "application/json", aws.ToString(head.ContentType))
	require.Equal(t, etag(body), aws.ToString(head.ETag))
	require.Equal(t, wantMeta, head.Metadata)

	b.put(t, "docs/plain", "no type")
	require.Equal(t, "application/octet-stream", aws.ToString(b.head(t, "docs/plain").ContentType))
	require.Empty(t, b.head(t, "docs/plain").Metadata)
}

// A put without If-None-Match replaces the whole object the key held:
// content, ETag, type, user metadata and checksum.
func testPutReplaces(t *testing.T, b *bundle) {
	b.put(t, "k", "first", withChecksum(sha256Checksum("first")), func(in *s3.PutObjectInput) {
		in.ContentType = aws.String("text/plain")
		in.Metadata = map[string]string{"gen": "1"}
	})
	out := b.put(t, "k", "second, longer")
	require.Equal(t, etag("second, longer"), aws.ToString(out.ETag))
	head := b.head(t, "k")
	require.Equal(t, etag("second, longer"), aws.ToString(head.ETag))
	require.Equal(t, "application/octet-stream", aws.ToString(head.ContentType))
	listed := b.list(t, &s3.ListObjectsV2Input{})
	require.Len(t, listed.Contents, 1)
	require.Equal(t, int64(len("second, longer")), aws.ToInt64(listed.Contents[0].Size))
	if b.deviates(ReplaceKeepsMetadata) {
		require.Equal(t, map[string]string{"gen": "1"}, head.Metadata)
		require.Equal(t, sha256Checksum("first"), aws.ToString(b.headChecksum(t, "k", types.ChecksumModeEnabled)))
		b.requireUnreadable(t, "k", int64(len("second, longer")))
		return
	}
	require.Empty(t, head.Metadata)
	require.Nil(t, b.headChecksum(t, "k", types.ChecksumModeEnabled))
	b.requireState(t, map[string]string{"k": "second, longer"})
}

// A put with no body stores an empty object, whose ETag is the MD5 of
// nothing; the SDK sends it with the same default type.
func testPutEmpty(t *testing.T, b *bundle) {
	out, err := b.Client.PutObject(b.ctx, &s3.PutObjectInput{Bucket: aws.String(b.Name), Key: aws.String("empty")})
	require.NoError(t, err)
	require.Equal(t, `"d41d8cd98f00b204e9800998ecf8427e"`, aws.ToString(out.ETag))
	require.Equal(t, etag(""), aws.ToString(out.ETag))
	b.requireState(t, map[string]string{"empty": ""})
	head := b.head(t, "empty")
	require.Equal(t, int64(0), aws.ToInt64(head.ContentLength))
	require.Equal(t, "application/octet-stream", aws.ToString(head.ContentType))
}

// A put whose body is shorter or longer than its ContentLength fails and
// stores nothing. Which error says so is the client's business, so the
// suite asks only that it fails: the SDK's HTTP client fails the request
// once it has sent ContentLength bytes of a longer body, or runs out of a
// shorter one; S3 refuses the bytes it got, as their CRC32 (which the SDK
// adds) is the whole body's, and would answer IncompleteBody to a body
// that ends early.
func testPutContentLength(t *testing.T, b *bundle) {
	for _, length := range []int64{4, 2} {
		in := b.putInput("k", "abc")
		in.ContentLength = aws.Int64(length)
		_, err := b.Client.PutObject(b.ctx, in)
		require.Error(t, err, "a 3-byte body with ContentLength %d", length)
	}
	if b.deviates(ChecksumsAsPlainHeaders) {
		b.requireUnreadable(t, "k", 2)
		return
	}
	b.requireState(t, map[string]string{})
}

// Every request about an object needs its key: the SDK refuses one with an
// empty key before it sends anything, with a serialization error.
func testEmptyKey(t *testing.T, b *bundle) {
	b.put(t, "k", "old")
	for op, err := range b.calls(b.ctx, b.Name, "") {
		if op == "ListObjectsV2" {
			require.NoError(t, err)
			continue
		}
		require.ErrorAs(t, err, new(*smithy.SerializationError), "%s: %v", op, err)
	}
	b.requireState(t, map[string]string{"k": "old"})
}
