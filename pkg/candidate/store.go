package candidate

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/fifoworker/fifoworker/internal/base/checksum"
)

// S3API is the part of the S3 client a Store calls; *s3.Client has it.
// Tests and wrappers (metrics, fault injection) implement it too.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ S3API = (*s3.Client)(nil)

// User metadata keys (x-amz-meta-*). The SDK returns them in lower case.
const (
	metaJobID      = "job-id"
	metaGeneration = "generation"
	metaAttemptID  = "attempt-id"
	metaSHA256     = "sha256"
)

// Store writes and reads the candidates of one bucket. It is safe for
// concurrent use.
type Store struct {
	api    S3API
	bucket string
	// cfg is the validated Config with its defaults filled in.
	cfg Config
	// slots holds one token per reservation: spool budget / max size of
	// them. Nil without a budget.
	slots chan struct{}
}

// New returns a Store with cfg. It fails with an error wrapping
// ErrInvalidConfig, naming the field, when cfg does not validate.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Store{api: cfg.Client, bucket: cfg.Bucket, cfg: cfg}
	if cfg.SpoolBudget > 0 {
		s.slots = make(chan struct{}, cfg.SpoolBudget/cfg.MaxSize)
	}
	return s, nil
}

// Info describes a stored candidate, from its metadata.
type Info struct {
	Key          Key
	SHA256       string // hex, as recorded at write time
	Size         int64
	ETag         string
	LastModified time.Time
}

// Entry is a candidate as listed; listing returns no metadata, so it has
// no SHA-256 (Head has).
type Entry struct {
	Key          Key
	Size         int64
	ETag         string
	LastModified time.Time
}

// Head returns the candidate's metadata. It fails with ErrNotFound when
// there is no object at the key and with ErrInvalidMetadata when the
// object was not written by a Store for this key.
func (s *Store) Head(ctx context.Context, key Key) (Info, error) {
	if err := key.Validate(); err != nil {
		return Info{}, err
	}
	out, err := s.api.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket:       aws.String(s.bucket),
		Key:          aws.String(key.String()),
		ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		return Info{}, fmt.Errorf("candidate: head %s: %w", key, classify(err))
	}
	return infoFrom(key, out.Metadata, out.ContentLength, out.ETag, out.LastModified, out.ChecksumSHA256)
}

// List returns the candidates of every generation of the job, in key order
// (by generation, then attempt id), reading every page. Objects under the
// job's prefix whose keys are not candidate keys are not candidates and
// are left out.
func (s *Store) List(ctx context.Context, jobID string) ([]Entry, error) {
	prefix, err := JobPrefix(jobID)
	if err != nil {
		return nil, err
	}
	var entries []Entry
	pages := s3.NewListObjectsV2Paginator(s.api, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(prefix),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("candidate: list %s: %w", prefix, classify(err))
		}
		for _, obj := range page.Contents {
			k, err := ParseKey(aws.ToString(obj.Key))
			if err != nil {
				continue
			}
			entries = append(entries, Entry{
				Key:          k,
				Size:         aws.ToInt64(obj.Size),
				ETag:         aws.ToString(obj.ETag),
				LastModified: aws.ToTime(obj.LastModified),
			})
		}
	}
	return entries, nil
}

// Delete removes the candidate at key. Deleting a key that holds nothing
// succeeds, as in S3, so a sweeper may repeat it. It does not check that
// the candidate was not accepted: that is the caller's business.
func (s *Store) Delete(ctx context.Context, key Key) error {
	if err := key.Validate(); err != nil {
		return err
	}
	_, err := s.api.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(key.String()),
	})
	if err != nil {
		return fmt.Errorf("candidate: delete %s: %w", key, classify(err))
	}
	return nil
}

// infoFrom checks an object's metadata against its key and returns it.
// s3Checksum is S3's own base64 SHA-256 of the object, when S3 returned
// one; it must agree with the recorded hash.
func infoFrom(key Key, meta map[string]string, size *int64, etag *string, modified *time.Time, s3Checksum *string) (Info, error) {
	lower := make(map[string]string, len(meta))
	for k, v := range meta {
		lower[strings.ToLower(k)] = v
	}
	bad := func(format string, args ...any) (Info, error) {
		return Info{}, fmt.Errorf("candidate: %s: %s: %w", key, fmt.Sprintf(format, args...), ErrInvalidMetadata)
	}
	sum := lower[metaSHA256]
	if !checksum.IsSHA256Hex(sum) {
		return bad("metadata sha256 %q is not a hex SHA-256", sum)
	}
	if got := lower[metaJobID]; got != key.JobID {
		return bad("metadata job id %q does not match the key", got)
	}
	if got := lower[metaGeneration]; got != strconv.FormatInt(key.Generation, 10) {
		return bad("metadata generation %q does not match the key", got)
	}
	if got := lower[metaAttemptID]; got != key.AttemptID {
		return bad("metadata attempt id %q does not match the key", got)
	}
	if size == nil || *size < 0 {
		return bad("no content length")
	}
	// A multipart object's checksum ends in "-<parts>" and is not the hash
	// of the content; only a full-object checksum can be compared.
	if c := aws.ToString(s3Checksum); c != "" && !strings.Contains(c, "-") {
		raw, err := base64.StdEncoding.DecodeString(c)
		if err != nil || hex.EncodeToString(raw) != sum {
			return Info{}, fmt.Errorf("candidate: %s: S3 checksum %s does not match the recorded sha256 %s: %w", key, c, sum, ErrChecksumMismatch)
		}
	}
	return Info{Key: key, SHA256: sum, Size: *size, ETag: aws.ToString(etag), LastModified: aws.ToTime(modified)}, nil
}

// S3 error codes this package acts on.
const (
	codePreconditionFailed = "PreconditionFailed"
	codeConflict           = "ConditionalRequestConflict"
)

// classify adds ErrNotFound to an error that says the key holds nothing,
// keeping the SDK error in the chain.
func classify(err error) error {
	var noKey *types.NoSuchKey
	var notFound *types.NotFound
	if errors.As(err, &noKey) || errors.As(err, &notFound) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

// isAPIError reports whether err is the S3 error code, or, for a response
// without an error code (HEAD, or a proxy), the HTTP status.
func isAPIError(err error, code string, status int) bool {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() != "" {
		return api.ErrorCode() == code
	}
	var resp interface{ HTTPStatusCode() int }
	return errors.As(err, &resp) && resp.HTTPStatusCode() == status
}
