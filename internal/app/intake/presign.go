package intake

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Presigner returns a URL that lets its holder GET the accepted result r,
// and only those bytes, for ttl.
type Presigner interface {
	PresignGet(ctx context.Context, r jobs.Result, ttl time.Duration) (string, error)
}

// S3PresignAPI is the part of *s3.PresignClient S3Presigner calls.
type S3PresignAPI interface {
	PresignGetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

// S3HeadAPI is the part of *s3.Client S3Presigner calls: the HEAD that
// finds the accepted version.
type S3HeadAPI interface {
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

var (
	_ S3PresignAPI = (*s3.PresignClient)(nil)
	_ S3HeadAPI    = (*s3.Client)(nil)
)

var (
	// ErrResultChanged: the object at a result's key is not the accepted
	// result (another size, another SHA-256, no SHA-256 S3 verified), or
	// none is: no URL is signed for it.
	ErrResultChanged = errors.New("the object at the key is not the accepted result")
	// ErrResultGone: no object is at a result's key; the accepted result
	// was deleted (by hand, or with the bucket's lifecycle). It wraps
	// ErrResultChanged. S3 answers a HEAD of a missing key 404 to a role
	// that may list the bucket and 403 to one that may not, as intake's
	// (S3's HeadObject reference): both mean gone here, so a deleted
	// result is not reported as a refusal that would send the operator
	// to IAM. Intake's role may read every candidate, so a 403 means a
	// missing key unless that grant is removed, its credentials expired or
	// another policy (the bucket's TLS-only rule, an SCP) refused the HEAD:
	// the message says so, since S3's 403 does not tell them apart.
	ErrResultGone = fmt.Errorf("no object at the key (the accepted result was deleted), or the HEAD was refused: %w", ErrResultChanged)
	// ErrUnversioned: S3 gave the object no version id, so a URL cannot be
	// pinned to it; the bucket must be versioned (template.yaml's is).
	ErrUnversioned = errors.New("the object has no version id: the bucket keeps no versions")
)

// S3PresignerConfig configures an S3Presigner. Client, Presign and Bucket
// are required.
type S3PresignerConfig struct {
	// Client heads the result's object; usually the *s3.Client Presign
	// was made from.
	Client S3HeadAPI
	// Presign signs the URLs: s3.NewPresignClient(client).
	Presign S3PresignAPI
	// Bucket holds the results.
	Bucket string
	// EmulatorWithoutChecksums is for an S3 emulator that keeps no
	// checksums (the local stack's gofakes3): a version without S3's
	// SHA-256 is then matched by its size alone. Never on AWS, where
	// every object the candidate store writes has S3's SHA-256, and one
	// without it was not written by the store.
	EmulatorWithoutChecksums bool
}

// Validate reports every field the configuration lacks, wrapping
// ErrInvalidConfig.
func (c S3PresignerConfig) Validate() error {
	var problems []string
	if c.Client == nil {
		problems = append(problems, "Client is nil")
	}
	if c.Presign == nil {
		problems = append(problems, "Presign is nil")
	}
	if c.Bucket == "" {
		problems = append(problems, "Bucket is empty")
	}
	return invalidConfig(problems)
}

// S3Presigner signs GETs of accepted results, each pinned to the version
// of its object that S3 verified to be the accepted bytes.
//
// The job item records the result's key, SHA-256 and size, and a candidate
// is written once (If-None-Match, which the bucket's policy requires), so
// the key's current version is normally the accepted one; after a delete
// (the key would then be writable again) it may not be. So PresignGet
// heads the key with S3's checksum (one HeadObject: s3:GetObject; the
// candidate store uploads with the SHA-256 as S3's own checksum, which S3
// checks against the body it receives) and signs the URL with that
// version's id only when its SHA-256 and size are the job item's. The URL
// then serves those bytes, or nothing (once the version is deleted), never
// what the key holds later. Its GET of one version is authorised as
// s3:GetObjectVersion. A checksum or an If-Match the downloader would have
// to send is not needed: the version id is in the signed URL itself.
//
// The cost is the HEAD: one request per GET of a completed job. Signing
// itself is local. The URL carries the signer's credentials, so it works
// only as long as they do: with a Lambda role's session credentials, until
// the URL's expiry or the session's end, whichever is first.
type S3Presigner struct {
	cfg S3PresignerConfig
}

var _ Presigner = (*S3Presigner)(nil)

// NewS3Presigner returns the presigner cfg describes, or the error of
// cfg.Validate (wrapping ErrInvalidConfig).
func NewS3Presigner(cfg S3PresignerConfig) (*S3Presigner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &S3Presigner{cfg: cfg}, nil
}

// PresignGet implements Presigner. It fails with ErrResultChanged when the
// key's current version is not the accepted result, with ErrResultGone
// (which wraps it) when the key holds no object, with ErrUnversioned when
// S3 gives it no version id, and with the S3 error when the HEAD fails
// otherwise.
func (p *S3Presigner) PresignGet(ctx context.Context, r jobs.Result, ttl time.Duration) (string, error) {
	version, err := p.acceptedVersion(ctx, r)
	if err != nil {
		return "", fmt.Errorf("intake: presign GET s3://%s/%s: %w", p.cfg.Bucket, r.Key, err)
	}
	req, err := p.cfg.Presign.PresignGetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(p.cfg.Bucket), Key: aws.String(r.Key), VersionId: aws.String(version),
	}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("intake: presign GET s3://%s/%s?versionId=%s: %w", p.cfg.Bucket, r.Key, version, err)
	}
	return req.URL, nil
}

// acceptedVersion returns the id of the key's current version when it is
// the accepted result.
func (p *S3Presigner) acceptedVersion(ctx context.Context, r jobs.Result) (string, error) {
	raw, err := hex.DecodeString(r.SHA256)
	if err != nil || len(raw) != 32 {
		return "", fmt.Errorf("the job's result hash %q is not a SHA-256: %w", r.SHA256, ErrResultChanged)
	}
	want := base64.StdEncoding.EncodeToString(raw)
	out, err := p.cfg.Client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(p.cfg.Bucket), Key: aws.String(r.Key), ChecksumMode: types.ChecksumModeEnabled,
	})
	switch {
	case err != nil && headFoundNothing(err):
		return "", fmt.Errorf("head answered %d: %w", httpStatus(err), ErrResultGone)
	case err != nil:
		return "", fmt.Errorf("head: %w", err)
	case out == nil:
		return "", fmt.Errorf("head: no answer: %w", ErrResultChanged)
	}
	// A multipart object's checksum ends in "-<parts>": a checksum of its
	// parts' checksums, never equal to the content's.
	got := aws.ToString(out.ChecksumSHA256)
	switch {
	case out.ContentLength == nil || *out.ContentLength != r.Size:
		return "", fmt.Errorf("%d bytes, accepted %d: %w", aws.ToInt64(out.ContentLength), r.Size, ErrResultChanged)
	case got == "" && !p.cfg.EmulatorWithoutChecksums:
		return "", fmt.Errorf("S3 holds no SHA-256 of it: %w", ErrResultChanged)
	case got != "" && got != want:
		return "", fmt.Errorf("S3's SHA-256 %s, accepted %s: %w", got, want, ErrResultChanged)
	case aws.ToString(out.VersionId) == "":
		return "", ErrUnversioned
	}
	return aws.ToString(out.VersionId), nil
}

// headFoundNothing reports whether a HEAD's error says the key holds no
// object: a 404 (types.NotFound), or the 403 S3 answers instead to a role
// that may not list the bucket (see ErrResultGone).
func headFoundNothing(err error) bool {
	var notFound *types.NotFound
	status := httpStatus(err)
	return errors.As(err, &notFound) || status == http.StatusNotFound || status == http.StatusForbidden
}

// httpStatus is the HTTP status of an SDK request's error, 0 when it has
// none.
func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}
