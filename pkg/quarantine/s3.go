package quarantine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3API is the part of the S3 client S3Bodies calls; *s3.Client has it.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

var _ S3API = (*s3.Client)(nil)

// S3Bodies is the BodyStore on one S3 bucket: each body is one object
// under its key (BodyKey for bodies too large for their item, ArchiveKey
// for what an operator discarded). A put replaces what the key held.
type S3Bodies struct {
	api    S3API
	bucket string
}

var _ BodyStore = (*S3Bodies)(nil)

// MaxBodyObject is the largest object GetBody reads: an SQS message is at
// most 1 MiB, and its archive (JSON, escaped) a few times that.
const MaxBodyObject = 16 << 20

// S3BodiesConfig configures an S3Bodies.
type S3BodiesConfig struct {
	// Client is the S3 client. Required.
	Client S3API
	// Bucket is the name of the bucket the bodies are kept in. Required.
	Bucket string
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c S3BodiesConfig) Validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	case c.Bucket == "":
		return fmt.Errorf("%w: Bucket is empty", ErrInvalidConfig)
	}
	return nil
}

// NewS3Bodies returns the body store on cfg.Bucket, or an error wrapping
// ErrInvalidConfig.
func NewS3Bodies(cfg S3BodiesConfig) (*S3Bodies, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &S3Bodies{api: cfg.Client, bucket: cfg.Bucket}, nil
}

// PutBody implements BodyStore: one PutObject.
func (b *S3Bodies) PutBody(ctx context.Context, key, body string) error {
	_, err := b.api.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(b.bucket),
		Key:           aws.String(key),
		Body:          strings.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String("application/octet-stream"),
	})
	if err != nil {
		return fmt.Errorf("quarantine: put body s3://%s/%s: %w", b.bucket, key, err)
	}
	return nil
}

// GetBody implements BodyStore: one GetObject; ErrNoBody when the key
// holds nothing.
func (b *S3Bodies) GetBody(ctx context.Context, key string) (string, error) {
	out, err := b.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	if err != nil {
		var noKey *types.NoSuchKey
		if errors.As(err, &noKey) {
			return "", fmt.Errorf("quarantine: get body s3://%s/%s: %w: %w", b.bucket, key, ErrNoBody, err)
		}
		return "", fmt.Errorf("quarantine: get body s3://%s/%s: %w", b.bucket, key, err)
	}
	defer out.Body.Close() //nolint:errcheck // read to the end or abandoned; nothing to report
	data, err := io.ReadAll(io.LimitReader(out.Body, MaxBodyObject+1))
	if err != nil {
		return "", fmt.Errorf("quarantine: get body s3://%s/%s: %w", b.bucket, key, err)
	}
	if len(data) > MaxBodyObject {
		return "", fmt.Errorf("quarantine: get body s3://%s/%s: larger than %d bytes", b.bucket, key, MaxBodyObject)
	}
	return string(data), nil
}
