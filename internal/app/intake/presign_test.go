package intake_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// headS3 answers HeadObject with what it holds for one key: the version
// S3 would call current, with its size and S3's own SHA-256.
type headS3 struct {
	out   *s3.HeadObjectOutput
	err   error
	heads []*s3.HeadObjectInput
}

func (h *headS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	h.heads = append(h.heads, in)
	return h.out, h.err
}

var (
	content     = []byte(`{"articles":120}`)
	contentSum  = sha256.Sum256(content)
	accepted    = jobs.Result{Key: "candidates/job-42/g0000000002/worker-b.json", SHA256: hex.EncodeToString(contentSum[:]), Size: int64(len(content))}
	otherSum    = sha256.Sum256([]byte(`{"articles":666}`))
	s3ChecksumB = func(sum [32]byte) *string { return aws.String(base64.StdEncoding.EncodeToString(sum[:])) }
)

// storedAs is the HEAD answer for a version of the accepted key.
func storedAs(version string, size int64, checksum *string) *s3.HeadObjectOutput {
	out := &s3.HeadObjectOutput{ContentLength: aws.Int64(size), ChecksumSHA256: checksum}
	if version != "" {
		out.VersionId = aws.String(version)
	}
	return out
}

func presigner(t *testing.T, h *headS3, emulator bool) *intake.S3Presigner {
	t.Helper()
	client := s3.NewFromConfig(aws.Config{
		Region:      "eu-west-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "not-a-secret", ""),
	})
	p, err := intake.NewS3Presigner(intake.S3PresignerConfig{
		Client: h, Presign: s3.NewPresignClient(client), Bucket: "fifoworker-candidates", EmulatorWithoutChecksums: emulator,
	})
	require.NoError(t, err)
	return p
}

// The download URL is pinned to the version of the object S3 verified to
// be the accepted result: its SHA-256 (S3's own checksum, which S3 checked
// when the worker uploaded it) and its size are the job item's. Whatever
// later happens at the key, the URL serves those bytes or nothing. Signing
// is local; the HEAD is the one request, with its checksum asked for.
func TestS3PresignerPinsTheURLToTheAcceptedVersion(t *testing.T) {
	t.Parallel()
	h := &headS3{out: storedAs("v-3HL4kqtJlcpXroDTDmJ", accepted.Size, s3ChecksumB(contentSum))}
	raw, err := presigner(t, h, false).PresignGet(t.Context(), accepted, 90*time.Second)
	require.NoError(t, err)

	require.Len(t, h.heads, 1)
	require.Equal(t, "fifoworker-candidates", aws.ToString(h.heads[0].Bucket))
	require.Equal(t, accepted.Key, aws.ToString(h.heads[0].Key))
	require.Equal(t, types.ChecksumModeEnabled, h.heads[0].ChecksumMode, "S3 returns its checksum only when asked")
	require.Nil(t, h.heads[0].VersionId, "the current version")

	u, err := url.Parse(raw)
	require.NoError(t, err)
	require.Equal(t, "https", u.Scheme)
	require.Equal(t, "fifoworker-candidates.s3.eu-west-1.amazonaws.com", u.Host)
	require.Equal(t, "/"+accepted.Key, u.Path)
	q := u.Query()
	require.Equal(t, "v-3HL4kqtJlcpXroDTDmJ", q.Get("versionId"), "pinned to the accepted version")
	require.Equal(t, "90", q.Get("X-Amz-Expires"))
	require.Equal(t, "AWS4-HMAC-SHA256", q.Get("X-Amz-Algorithm"))
	require.Equal(t, "host", q.Get("X-Amz-SignedHeaders"), "the downloader sends no header of ours")
	require.NotEmpty(t, q.Get("X-Amz-Signature"))
}

// An object at the key that is not the accepted result (replaced after a
// delete, or deleted), one S3 holds no SHA-256 of (the candidate store
// always sends one, so it was not written by it), or a bucket that keeps no
// versions, gets no URL: the answer is an error, never a URL to other bytes
// or to whatever the key will hold.
func TestS3PresignerSignsNothingButTheAcceptedResult(t *testing.T) {
	t.Parallel()
	notFound := &types.NotFound{}
	for name, c := range map[string]struct {
		out  *s3.HeadObjectOutput
		err  error
		want error
	}{
		"other content":          {out: storedAs("v2", accepted.Size, s3ChecksumB(otherSum)), want: intake.ErrResultChanged},
		"one byte more":          {out: storedAs("v2", accepted.Size+1, s3ChecksumB(contentSum)), want: intake.ErrResultChanged},
		"one byte less":          {out: storedAs("v2", accepted.Size-1, s3ChecksumB(contentSum)), want: intake.ErrResultChanged},
		"no size":                {out: &s3.HeadObjectOutput{VersionId: aws.String("v2"), ChecksumSHA256: s3ChecksumB(contentSum)}, want: intake.ErrResultChanged},
		"no checksum":            {out: storedAs("v2", accepted.Size, nil), want: intake.ErrResultChanged},
		"a multipart checksum":   {out: storedAs("v2", accepted.Size, aws.String(*s3ChecksumB(contentSum)+"-2")), want: intake.ErrResultChanged},
		"no version":             {out: storedAs("", accepted.Size, s3ChecksumB(contentSum)), want: intake.ErrUnversioned},
		"deleted":                {err: notFound, want: intake.ErrResultGone},
		"HEAD refused":           {err: errors.New("AccessDenied"), want: nil},
		"no answer and no error": {out: nil, want: intake.ErrResultChanged},
	} {
		h := &headS3{out: c.out, err: c.err}
		raw, err := presigner(t, h, false).PresignGet(t.Context(), accepted, time.Minute)
		require.Error(t, err, name)
		require.Empty(t, raw, name)
		if c.want != nil {
			require.ErrorIs(t, err, c.want, name)
		}
		require.Contains(t, err.Error(), accepted.Key, "%s: the error names the key", name)
	}

	// A job item whose hash is not a SHA-256 cannot be matched to anything.
	h := &headS3{out: storedAs("v1", accepted.Size, s3ChecksumB(contentSum))}
	bad := accepted
	bad.SHA256 = "not-hex"
	_, err := presigner(t, h, false).PresignGet(t.Context(), bad, time.Minute)
	require.ErrorIs(t, err, intake.ErrResultChanged)
}

// An S3 emulator that keeps no checksums (the local stack's gofakes3)
// returns none: with EmulatorWithoutChecksums, the size alone picks the
// version there. A checksum it does return is still held to the accepted
// one.
func TestS3PresignerOnAnEmulatorWithoutChecksums(t *testing.T) {
	t.Parallel()
	raw, err := presigner(t, &headS3{out: storedAs("v1", accepted.Size, nil)}, true).PresignGet(t.Context(), accepted, time.Minute)
	require.NoError(t, err)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	require.Equal(t, "v1", u.Query().Get("versionId"))

	_, err = presigner(t, &headS3{out: storedAs("v1", accepted.Size+1, nil)}, true).PresignGet(t.Context(), accepted, time.Minute)
	require.ErrorIs(t, err, intake.ErrResultChanged)
	_, err = presigner(t, &headS3{out: storedAs("v1", accepted.Size, s3ChecksumB(otherSum))}, true).PresignGet(t.Context(), accepted, time.Minute)
	require.ErrorIs(t, err, intake.ErrResultChanged)
}

func TestS3PresignerConfigIsValidated(t *testing.T) {
	t.Parallel()
	client := s3.NewFromConfig(aws.Config{Region: "eu-west-1"})
	ok := intake.S3PresignerConfig{Client: client, Presign: s3.NewPresignClient(client), Bucket: "b"}
	require.NoError(t, ok.Validate())
	for name, tc := range map[string]struct {
		change func(c *intake.S3PresignerConfig)
		field  string
	}{
		"no client":  {func(c *intake.S3PresignerConfig) { c.Client = nil }, "Client"},
		"no presign": {func(c *intake.S3PresignerConfig) { c.Presign = nil }, "Presign"},
		"no bucket":  {func(c *intake.S3PresignerConfig) { c.Bucket = "" }, "Bucket"},
	} {
		c := ok
		tc.change(&c)
		require.ErrorIs(t, c.Validate(), intake.ErrInvalidConfig, name)
		require.ErrorContains(t, c.Validate(), tc.field, name)
		p, err := intake.NewS3Presigner(c)
		require.ErrorIs(t, err, intake.ErrInvalidConfig, name)
		require.Nil(t, p, name)
	}
}
