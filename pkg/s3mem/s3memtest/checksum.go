package s3memtest

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"
)

// sha256Checksum is S3's SHA-256 checksum of body: base64, not hex.
func sha256Checksum(body string) string {
	sum := sha256.Sum256([]byte(body))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func withChecksum(sum string) func(*s3.PutObjectInput) {
	return func(in *s3.PutObjectInput) { in.ChecksumSHA256 = aws.String(sum) }
}

func (b *bundle) headChecksum(t *testing.T, key string, mode types.ChecksumMode) *string {
	t.Helper()
	out, err := b.Client.HeadObject(b.ctx, &s3.HeadObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key), ChecksumMode: mode})
	require.NoError(t, err)
	return out.ChecksumSHA256
}

// A put's SHA-256 checksum is stored, and returned by the put and by
// HeadObject only with ChecksumMode ENABLED (AWS's HeadObject reference:
// "To retrieve the checksum, this mode must be enabled"). GetObject
// returns it either way: the SDK's client, with its default
// ResponseChecksumValidation (WhenSupported, as the functions configure
// theirs), asks every GetObject with ChecksumMode ENABLED. An object put
// without one has no SHA-256 checksum.
func testChecksumStored(t *testing.T, b *bundle) {
	sum := sha256Checksum("abc")
	out := b.put(t, "k", "abc", withChecksum(sum))
	if b.deviates(ChecksumsAsPlainHeaders) {
		require.Nil(t, out.ChecksumSHA256, "the put's answer")
		require.Equal(t, sum, aws.ToString(b.headChecksum(t, "k", "")), "HeadObject without ChecksumMode")
	} else {
		require.Equal(t, sum, aws.ToString(out.ChecksumSHA256), "the put's answer")
		require.Nil(t, b.headChecksum(t, "k", ""), "HeadObject without ChecksumMode")
	}
	require.Equal(t, sum, aws.ToString(b.headChecksum(t, "k", types.ChecksumModeEnabled)))

	for _, mode := range []types.ChecksumMode{types.ChecksumModeEnabled, ""} {
		got, err := b.Client.GetObject(b.ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String("k"), ChecksumMode: mode})
		require.NoError(t, err)
		require.Equal(t, sum, aws.ToString(got.ChecksumSHA256), "GetObject with ChecksumMode %q", mode)
		require.Equal(t, "abc", readAll(t, got.Body))
	}

	b.put(t, "none", "abc")
	require.Nil(t, b.headChecksum(t, "none", types.ChecksumModeEnabled))
}

// A put whose SHA-256 checksum is not its body's is refused with 400
// BadDigest (AWS's checking-object-integrity guide) and stores nothing.
func testChecksumMismatch(t *testing.T, b *bundle) {
	in := b.putInput("k", "abc")
	withChecksum(sha256Checksum("abd"))(in)
	_, err := b.Client.PutObject(b.ctx, in)
	if b.deviates(ChecksumsAsPlainHeaders) {
		require.NoError(t, err)
		b.requireUnreadable(t, "k", 3)
		return
	}
	require.Equal(t, "BadDigest", code(err), "%v", err)
	b.requireState(t, map[string]string{})
}

// requireUnreadable fails the test unless the bucket holds only key, of
// size bytes, stored with a checksum that is not its content's: reading
// it to the end fails, as the SDK checks what it reads.
func (b *bundle) requireUnreadable(t *testing.T, key string, size int64) {
	t.Helper()
	require.Equal(t, []string{key}, b.keys(t, ""))
	require.Equal(t, size, aws.ToInt64(b.head(t, key).ContentLength))
	out, err := b.Client.GetObject(b.ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
	require.NoError(t, err)
	_, err = io.ReadAll(out.Body)
	require.ErrorContains(t, errors.Join(err, out.Body.Close()), "checksum did not match")
}
