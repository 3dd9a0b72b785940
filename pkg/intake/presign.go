package intake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Presigner returns a URL that lets its holder GET the object at key, and
// only that object, for ttl.
type Presigner interface {
	PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// S3PresignAPI is the part of *s3.PresignClient S3Presigner calls.
type S3PresignAPI interface {
	PresignGetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

var _ S3PresignAPI = (*s3.PresignClient)(nil)

// S3Presigner presigns GETs of a bucket's objects. Signing is local: it
// sends no request. The URL carries the signer's credentials, so it works
// only as long as they do: with a Lambda role's session credentials, until
// the URL's expiry or the session's end, whichever is first.
type S3Presigner struct {
	api    S3PresignAPI
	bucket string
}

var _ Presigner = (*S3Presigner)(nil)

// NewS3Presigner presigns GETs of bucket's objects, for example with
// s3.NewPresignClient(s3.NewFromConfig(cfg)).
func NewS3Presigner(api S3PresignAPI, bucket string) (*S3Presigner, error) {
	if api == nil || bucket == "" {
		return nil, errors.New("intake: NewS3Presigner needs a presign client and a bucket")
	}
	return &S3Presigner{api: api, bucket: bucket}, nil
}

// PresignGet implements Presigner.
func (p *S3Presigner) PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error) {
	req, err := p.api.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(key)},
		s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("intake: presign GET s3://%s/%s: %w", p.bucket, key, err)
	}
	return req.URL, nil
}
