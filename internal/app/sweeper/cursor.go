package sweeper

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// Cursor remembers where the last bounded run stopped: the last key it
// decided about, "" for the beginning of the bucket.
type Cursor interface {
	Load(ctx context.Context) (string, error)
	Save(ctx context.Context, key string) error
}

// MemoryCursor is a Cursor in memory, for tests and for a Sweeper whose
// runs share a process.
type MemoryCursor struct {
	mu  sync.Mutex
	key string
}

// Load implements Cursor.
func (c *MemoryCursor) Load(context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.key, nil
}

// Save implements Cursor.
func (c *MemoryCursor) Save(_ context.Context, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.key = key
	return nil
}

// CursorKey is where S3Cursor keeps the cursor in the candidates bucket:
// outside candidates/, so no listing of candidates sees it.
const CursorKey = "sweeper/cursor"

// maxCursor is the longest cursor: an S3 key is at most 1,024 bytes.
const maxCursor = 1024

// CursorAPI is the part of the S3 client S3Cursor calls; *s3.Client has it.
type CursorAPI interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

var _ CursorAPI = (*s3.Client)(nil)

// RepairCursorKey is where the repair's cursor (Config.RepairCursor) is
// kept in the candidates bucket, beside CursorKey.
const RepairCursorKey = "sweeper/finished"

// RecheckCursorKey is where the recheck's cursor (Config.RecheckCursor) is
// kept in the candidates bucket, beside RepairCursorKey.
const RecheckCursorKey = "sweeper/finished-recheck"

// S3Cursor keeps the cursor as the body of one object (S3CursorConfig's
// Key): one GetObject per Load and one PutObject per Save.
type S3Cursor struct {
	api    CursorAPI
	bucket string
	key    string
}

var _ Cursor = (*S3Cursor)(nil)

// S3CursorConfig configures an S3Cursor.
type S3CursorConfig struct {
	// Client is the S3 client. Required.
	Client CursorAPI
	// Bucket is the candidates bucket. Required.
	Bucket string
	// Key is the cursor's object. Default (empty): CursorKey, the sweep's;
	// RepairCursorKey and RecheckCursorKey are the repair's. It must be
	// under sweeper/, which the sweeper's role may read and write, and so
	// outside candidates/, where a listing of candidates would see it.
	Key string
}

// cursorPrefix is where the cursors are kept.
const cursorPrefix = "sweeper/"

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c S3CursorConfig) Validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	case c.Bucket == "":
		return fmt.Errorf("%w: Bucket is empty", ErrInvalidConfig)
	case c.Key != "" && (!strings.HasPrefix(c.Key, cursorPrefix) || c.Key == cursorPrefix):
		return fmt.Errorf("%w: Key %q is not under %s", ErrInvalidConfig, c.Key, cursorPrefix)
	}
	return nil
}

// NewS3Cursor returns the cursor at cfg.Key in cfg.Bucket, or an error
// wrapping ErrInvalidConfig.
func NewS3Cursor(cfg S3CursorConfig) (*S3Cursor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &S3Cursor{api: cfg.Client, bucket: cfg.Bucket, key: cmp.Or(cfg.Key, CursorKey)}, nil
}

// Load implements Cursor. No cursor object yet is the beginning, "".
func (c *S3Cursor) Load(ctx context.Context) (string, error) {
	body, found, err := getSmall(ctx, c.api, c.bucket, c.key, maxCursor)
	switch {
	case err != nil:
		return "", fmt.Errorf("sweeper: load cursor s3://%s/%s: %w", c.bucket, c.key, err)
	case !found:
		return "", nil
	case len(body) > maxCursor || !utf8.Valid(body):
		return "", fmt.Errorf("sweeper: cursor s3://%s/%s is not a key: %d bytes", c.bucket, c.key, len(body))
	}
	return string(body), nil
}

// getSmall reads the object at key, and at most limit+1 bytes of it, so
// that a caller can tell a body over limit. found is false when there is
// no object at key.
//
// S3 answers a GetObject of a missing key with 404 only to a caller that
// may list the bucket; to one whose s3:ListBucket is limited by a prefix
// condition, as the sweeper's role is, the answer is 403. So a 403 is
// checked with a listing of the key itself, which that role may make: no
// such object is not found, anything else the 403 it was.
func getSmall(ctx context.Context, api CursorAPI, bucket, key string, limit int) (body []byte, found bool, err error) {
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		var noKey *types.NoSuchKey
		if errors.As(err, &noKey) {
			return nil, false, nil
		}
		if isAccessDenied(err) {
			if missing, lerr := missingKey(ctx, api, bucket, key); lerr == nil && missing {
				return nil, false, nil
			}
		}
		return nil, false, err
	}
	defer func() { _ = out.Body.Close() }()
	body, err = io.ReadAll(io.LimitReader(out.Body, int64(limit)+1))
	if err != nil {
		return nil, false, err
	}
	return body, true, nil
}

// missingKey reports whether a listing of key finds no object at it.
func missingKey(ctx context.Context, api CursorAPI, bucket, key string) (bool, error) {
	out, err := api.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket: aws.String(bucket), Prefix: aws.String(key), MaxKeys: aws.Int32(1),
	})
	if err != nil {
		return false, err
	}
	for _, obj := range out.Contents {
		if aws.ToString(obj.Key) == key {
			return false, nil
		}
	}
	return true, nil
}

// Save implements Cursor.
func (c *S3Cursor) Save(ctx context.Context, key string) error {
	if len(key) > maxCursor || !utf8.ValidString(key) {
		return fmt.Errorf("sweeper: save cursor: %d bytes is not a key", len(key))
	}
	_, err := c.api.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(c.bucket),
		Key:           aws.String(c.key),
		Body:          bytes.NewReader([]byte(key)),
		ContentLength: aws.Int64(int64(len(key))),
		ContentType:   aws.String("text/plain; charset=utf-8"),
	})
	if err != nil {
		return fmt.Errorf("sweeper: save cursor s3://%s/%s: %w", c.bucket, c.key, err)
	}
	return nil
}

func isAccessDenied(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() != "" {
		return api.ErrorCode() == "AccessDenied"
	}
	var resp interface{ HTTPStatusCode() int }
	return errors.As(err, &resp) && resp.HTTPStatusCode() == 403
}
