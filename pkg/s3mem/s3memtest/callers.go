package s3memtest

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
)

// The requests of the packages that call S3 besides candidate.Store
// (whose own conformance tests run in pkg/candidate), made as they make
// them: the sweeper's cursor (internal/app/sweeper's S3Cursor) and the
// quarantine's bodies (pkg/quarantine's S3Bodies).

// cursorKey is where the sweeper keeps its cursor; its neighbours below
// share its prefix or sort around it.
const cursorKey = "sweeper/cursor"

// The cursor learns whether its key holds an object from a listing with
// the key as the prefix and MaxKeys 1: the key, when it exists, is the
// first key under a prefix that is itself, so the page holds it, and
// when it does not the page holds a longer neighbour or nothing.
func testCursorListing(t *testing.T, b *bundle) {
	first := func() []string {
		t.Helper()
		in := &s3.ListObjectsV2Input{Prefix: aws.String(cursorKey), MaxKeys: aws.Int32(1)}
		out := b.list(t, in)
		requirePage(t, b, in, out)
		return keysOf(out)
	}
	require.Empty(t, first())
	b.putAll(t, "sweeper/curso", "sweeper/cursoq", "sweeper/cursos", "sweeper/finished")
	require.Empty(t, first(), "keys around the cursor's are not under it")
	b.putAll(t, "sweeper/cursor/x", "sweeper/cursor-old")
	require.Equal(t, []string{"sweeper/cursor-old"}, first())
	b.put(t, cursorKey, "candidates/job-42/")
	require.Equal(t, []string{cursorKey}, first())
}

// The cursor is a short UTF-8 body with its length and a text type; a save
// replaces it.
func testCursorRoundTrip(t *testing.T, b *bundle) {
	save := func(cursor string) {
		t.Helper()
		b.put(t, cursorKey, cursor, func(in *s3.PutObjectInput) {
			in.Body = bytes.NewReader([]byte(cursor))
			in.ContentLength = aws.Int64(int64(len(cursor)))
			in.ContentType = aws.String("text/plain; charset=utf-8")
		})
	}
	save("candidates/jöb-42/g0000000002")
	save("candidates/jöb-43/")
	b.requireState(t, map[string]string{cursorKey: "candidates/jöb-43/"})
	require.Equal(t, "text/plain; charset=utf-8", aws.ToString(b.head(t, cursorKey).ContentType))
}

// A quarantined body is any bytes, up to a few MiB (an SQS message is at
// most 1 MiB; its archive a few times that), put with its length and a
// binary type, read back whole, replaced by a later put, and NoSuchKey
// once deleted.
func testBodies(t *testing.T, b *bundle) {
	// As quarantine.BodyKey and ArchiveKey name them: a group's name is
	// path-escaped, so a key may hold a percent sign.
	const (
		bodyKey    = "quarantine/orders.fifo/g%2F1/00000000000000000001.body"
		archiveKey = "quarantine-archive/orders.fifo/g%2F1/00000000000000000002.json"
	)
	body := make([]byte, 1<<20+1)
	_, err := rand.Read(body)
	require.NoError(t, err)
	body[0], body[1], body[2] = 0, 0xff, 0xfe // NUL and bytes that are no UTF-8
	putBody := func(key string, body []byte) {
		t.Helper()
		b.put(t, key, "", func(in *s3.PutObjectInput) {
			in.Body = bytes.NewReader(body)
			in.ContentLength = aws.Int64(int64(len(body)))
			in.ContentType = aws.String("application/octet-stream")
		})
	}
	putBody(bodyKey, body)
	putBody(archiveKey, []byte(`{"body":"x"}`))
	b.requireState(t, map[string]string{bodyKey: string(body), archiveKey: `{"body":"x"}`})

	putBody(bodyKey, []byte("shorter"))
	_, err = b.Client.DeleteObject(b.ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.Name), Key: aws.String(archiveKey)})
	require.NoError(t, err)
	b.requireState(t, map[string]string{bodyKey: "shorter"})
	_, ok := b.get(t, archiveKey)
	require.False(t, ok)
}
