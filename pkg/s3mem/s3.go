package s3mem

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // S3's ETag of a single-part object is the MD5 of its content
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3 is an in-memory S3: it answers the calls of the SDK's *s3.Client it
// implements as that client, with its default settings, answers them for
// S3 itself. The conformance suite s3memtest holds it, and the local
// stack's emulator, to AWS's behaviour:
//
//   - PutObject reads the whole body, checks it against ContentLength
//     (IncompleteBody) and against ChecksumSHA256 when given (BadDigest), and
//     with IfNoneMatch "*" refuses a key that holds an object (412
//     PreconditionFailed); any other IfNoneMatch is 501 NotImplemented. A put
//     without it replaces the whole object. The ETag is the quoted MD5 of the
//     content; user metadata comes back with lower-case keys, as the SDK
//     returns it; the Content-Type is the one sent, or
//     application/octet-stream, which the SDK sends for a put that sets none.
//   - GetObject and HeadObject answer NoSuchKey and NotFound for a missing
//     key. HeadObject returns the object's SHA-256 checksum only with
//     ChecksumMode ENABLED; GetObject always does, as the SDK asks for it
//     with its default ResponseChecksumValidation, and then its body, like
//     the SDK's validating reader, fails the read that reaches the end when
//     the content does not match it.
//   - ListObjectsV2 lists keys in UTF-8 byte order under Prefix, after
//     StartAfter and ContinuationToken, at most MaxKeys (default and cap
//     1,000) per page, with IsTruncated and NextContinuationToken. MaxKeys 0
//     lists nothing and is not truncated; a negative MaxKeys is
//     InvalidArgument.
//   - DeleteObject of a missing key succeeds.
//   - LastModified is the clock's time (Config.Now), truncated to the
//     second as S3 reports it.
//   - Any bucket but the ones it was made with is NoSuchBucket (NotFound to
//     HeadObject, whose answer has no body to carry the code).
//   - A request about an object with an empty key fails as the SDK fails
//     it, with a *smithy.SerializationError, before it reaches a bucket; a
//     request whose context has ended fails with the context's error.
//
// It is safe for concurrent use; concurrent conditional puts of one key are
// serialised, so one wins and the others get 412 (S3 may also answer 409
// ConditionalRequestConflict, which the candidate store retries).
type S3 struct {
	now func() time.Time

	mu      sync.Mutex
	buckets map[string]map[string]*object
}

type object struct {
	body        []byte
	meta        map[string]string
	contentType string
	checksum    string // base64 SHA-256, S3's own checksum; "" when none was sent
	etag        string
	modified    time.Time
}

// api is the part of the S3 client that S3 and FaultyS3 implement, with
// the SDK's signatures (the check against *s3.Client): what
// candidate.Store calls, and a subset of it the sweeper's cursor and the
// quarantine's body store call. It is s3memtest.API, which this package
// cannot import.
type api interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var (
	_ api = (*s3.Client)(nil)
	_ api = (*S3)(nil)
)

// ErrInvalidConfig is what New and NewFaultyS3 return for a Config they
// cannot serve.
var ErrInvalidConfig = errors.New("s3mem: invalid configuration")

// Config configures an S3 (and a FaultyS3).
type Config struct {
	// Buckets are the names of the buckets it holds, all empty at first:
	// at least one, none empty, each once (required).
	Buckets []string
	// Now is the clock LastModified is read from; nil means time.Now.
	Now func() time.Time
}

// Validate reports the first setting New cannot serve, naming it.
func (c Config) Validate() error {
	if len(c.Buckets) == 0 {
		return fmt.Errorf("%w: Buckets is empty", ErrInvalidConfig)
	}
	for i, b := range c.Buckets {
		if b == "" {
			return fmt.Errorf("%w: Buckets[%d] is empty", ErrInvalidConfig, i)
		}
		if slices.Index(c.Buckets, b) < i {
			return fmt.Errorf("%w: Buckets[%d] %q is named twice", ErrInvalidConfig, i, b)
		}
	}
	return nil
}

// New returns an S3 with cfg's buckets, all empty.
func New(cfg Config) (*S3, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &S3{now: cfg.Now, buckets: make(map[string]map[string]*object, len(cfg.Buckets))}
	if m.now == nil {
		m.now = time.Now
	}
	for _, b := range cfg.Buckets {
		m.buckets[b] = map[string]*object{}
	}
	return m, nil
}

// apiError is an S3 error answer with its code, as the SDK returns it.
func apiError(code, msg string) error {
	return &smithy.GenericAPIError{Code: code, Message: "s3mem: " + msg}
}

// bucket returns the objects of a bucket; call with mu held.
func (m *S3) bucket(name *string) (map[string]*object, error) {
	b, ok := m.buckets[aws.ToString(name)]
	if !ok {
		return nil, apiError("NoSuchBucket", "no bucket "+aws.ToString(name))
	}
	return b, nil
}

// start is what every call checks before it reaches a bucket: a request
// about an object needs its key, which the SDK checks before it sends
// anything (with a serialization error), and a context that has ended
// fails the call.
func start(ctx context.Context, key **string) error {
	if key != nil && aws.ToString(*key) == "" {
		return &smithy.SerializationError{Err: errors.New("s3mem: input member Key must not be empty")}
	}
	return ctx.Err()
}

// PutObject implements the S3 call.
func (m *S3) PutObject(ctx context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if err := start(ctx, &in.Key); err != nil {
		return nil, err
	}
	var body []byte
	if in.Body != nil {
		var err error
		if body, err = io.ReadAll(in.Body); err != nil {
			return nil, err
		}
	}
	if in.ContentLength != nil && *in.ContentLength != int64(len(body)) {
		return nil, apiError("IncompleteBody", "the body is not Content-Length bytes long")
	}
	sum := sha256.Sum256(body)
	checksum := base64.StdEncoding.EncodeToString(sum[:])
	if c := aws.ToString(in.ChecksumSHA256); c != "" && c != checksum {
		return nil, apiError("BadDigest", "the SHA-256 checksum does not match the body")
	}
	if in.ChecksumSHA256 == nil {
		checksum = ""
	}
	if m := aws.ToString(in.IfNoneMatch); m != "" && m != "*" {
		return nil, apiError("NotImplemented", "If-None-Match takes only *")
	}
	etag := md5.Sum(body) //nolint:gosec // the ETag, not a protection
	obj := &object{body: body, meta: lower(in.Metadata), contentType: contentType(in.ContentType), checksum: checksum,
		etag: `"` + hex.EncodeToString(etag[:]) + `"`}
	m.mu.Lock()
	defer m.mu.Unlock()
	objects, err := m.bucket(in.Bucket)
	if err != nil {
		return nil, err
	}
	key := aws.ToString(in.Key)
	if aws.ToString(in.IfNoneMatch) == "*" && objects[key] != nil {
		return nil, apiError("PreconditionFailed", "the key holds an object")
	}
	obj.modified = m.now().UTC().Truncate(time.Second)
	objects[key] = obj
	out := &s3.PutObjectOutput{ETag: aws.String(obj.etag)}
	if obj.checksum != "" {
		out.ChecksumSHA256 = aws.String(obj.checksum)
	}
	return out, nil
}

// PutRaw stores an object exactly as given, without the checks S3 makes on
// upload (the body against checksum, a base64 SHA-256, when not empty):
// what corruption at rest, or an emulator that checks nothing, leaves.
func (m *S3) PutRaw(bucket, key string, body []byte, meta map[string]string, checksum string) error {
	etag := md5.Sum(body) //nolint:gosec // the ETag, not a protection
	m.mu.Lock()
	defer m.mu.Unlock()
	objects, err := m.bucket(&bucket)
	if err != nil {
		return err
	}
	objects[key] = &object{body: slices.Clone(body), meta: lower(meta), contentType: contentType(nil), checksum: checksum,
		etag: `"` + hex.EncodeToString(etag[:]) + `"`, modified: m.now().UTC().Truncate(time.Second)}
	return nil
}

// contentType is the Content-Type S3 stores: the one sent, or
// application/octet-stream, which the SDK sends for a put that sets none
// (S3's own default, binary/octet-stream, is for a request without the
// header, which the SDK does not make).
func contentType(sent *string) string {
	if t := aws.ToString(sent); t != "" {
		return t
	}
	return "application/octet-stream"
}

func lower(meta map[string]string) map[string]string {
	out := make(map[string]string, len(meta))
	for k, v := range meta {
		out[strings.ToLower(k)] = v
	}
	return out
}

// lookup returns a copy of the object at key, nil if there is none.
func (m *S3) lookup(bucket, key *string) (*object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	objects, err := m.bucket(bucket)
	if err != nil {
		return nil, err
	}
	obj := objects[aws.ToString(key)]
	if obj == nil {
		return nil, nil
	}
	c := *obj
	c.meta = maps.Clone(obj.meta)
	return &c, nil
}

// GetObject implements the S3 call.
func (m *S3) GetObject(ctx context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if err := start(ctx, &in.Key); err != nil {
		return nil, err
	}
	obj, err := m.lookup(in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, &types.NoSuchKey{Message: aws.String("s3mem: no such key")}
	}
	out := &s3.GetObjectOutput{
		Body:          io.NopCloser(bytes.NewReader(obj.body)),
		ContentLength: aws.Int64(int64(len(obj.body))),
		ContentType:   aws.String(obj.contentType),
		ETag:          aws.String(obj.etag),
		LastModified:  aws.Time(obj.modified),
		Metadata:      obj.meta,
	}
	// The SDK's client, with its default ResponseChecksumValidation
	// (WhenSupported), sends every GetObject with ChecksumMode ENABLED.
	if obj.checksum != "" {
		out.ChecksumSHA256 = aws.String(obj.checksum)
		if !composite(obj.checksum) {
			out.Body = &validatingBody{r: bytes.NewReader(obj.body), want: obj.checksum, hash: sha256.New()}
		}
	}
	return out, nil
}

// composite reports whether checksum is a multipart upload's checksum of
// its parts' checksums ("<base64>-<parts>"), which no body read can check:
// the SDK's validating reader leaves a body alone when its checksum has a
// '-' (no base64 digit is one), and so does GetObject here.
func composite(checksum string) bool { return strings.Contains(checksum, "-") }

// validatingBody is what the SDK's checksum-validating reader does with a
// body whose checksum came back: the read that reaches the end fails when
// the content's SHA-256 is not the checksum.
type validatingBody struct {
	r    io.Reader
	want string
	hash hash.Hash
	err  error
}

func (v *validatingBody) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	v.hash.Write(p[:n])
	if errors.Is(err, io.EOF) {
		if got := base64.StdEncoding.EncodeToString(v.hash.Sum(nil)); got != v.want {
			v.err = fmt.Errorf("checksum did not match: algorithm SHA256, expect %v, actual %v", v.want, got)
			return n, v.err
		}
	}
	return n, err
}

func (v *validatingBody) Close() error { return nil }

// HeadObject implements the S3 call.
func (m *S3) HeadObject(ctx context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if err := start(ctx, &in.Key); err != nil {
		return nil, err
	}
	obj, err := m.lookup(in.Bucket, in.Key)
	if err != nil {
		// S3's 404 to a HEAD has no body to name NoSuchBucket in, so the
		// SDK makes it NotFound, as for a missing key.
		return nil, &types.NotFound{Message: aws.String(err.Error())}
	}
	if obj == nil {
		return nil, &types.NotFound{Message: aws.String("s3mem: no such key")}
	}
	out := &s3.HeadObjectOutput{
		ContentLength: aws.Int64(int64(len(obj.body))),
		ContentType:   aws.String(obj.contentType),
		ETag:          aws.String(obj.etag),
		LastModified:  aws.Time(obj.modified),
		Metadata:      obj.meta,
	}
	if in.ChecksumMode == types.ChecksumModeEnabled && obj.checksum != "" {
		out.ChecksumSHA256 = aws.String(obj.checksum)
	}
	return out, nil
}

// maxKeys is ListObjectsV2's page size and its cap.
const maxKeys = 1000

// ListObjectsV2 implements the S3 call.
func (m *S3) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	if err := start(ctx, nil); err != nil {
		return nil, err
	}
	limit := maxKeys
	if in.MaxKeys != nil {
		if *in.MaxKeys < 0 {
			return nil, apiError("InvalidArgument", "negative MaxKeys")
		}
		limit = min(int(*in.MaxKeys), maxKeys)
	}
	// A continuation token, when given, is where the previous page ended;
	// StartAfter applies to the first page only, and both exclude the key.
	after := aws.ToString(in.StartAfter)
	if t := aws.ToString(in.ContinuationToken); t != "" {
		after = max(after, t)
	}
	prefix := aws.ToString(in.Prefix)
	m.mu.Lock()
	defer m.mu.Unlock()
	objects, err := m.bucket(in.Bucket)
	if err != nil {
		return nil, err
	}
	var keys []string
	for k := range objects {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // UTF-8 byte order, as S3 lists
	out := &s3.ListObjectsV2Output{
		Name: in.Bucket, Prefix: in.Prefix, StartAfter: in.StartAfter, ContinuationToken: in.ContinuationToken,
		MaxKeys: aws.Int32(int32(limit)), IsTruncated: aws.Bool(false),
	}
	switch {
	case limit == 0: // asks for nothing, and S3 answers that nothing more is to come
		keys = nil
	case len(keys) > limit:
		keys = keys[:limit]
		out.IsTruncated = aws.Bool(true)
		out.NextContinuationToken = aws.String(keys[len(keys)-1])
	}
	for _, k := range keys {
		obj := objects[k]
		out.Contents = append(out.Contents, types.Object{
			Key: aws.String(k), Size: aws.Int64(int64(len(obj.body))), ETag: aws.String(obj.etag),
			LastModified: aws.Time(obj.modified), StorageClass: types.ObjectStorageClassStandard,
		})
	}
	out.KeyCount = aws.Int32(int32(len(keys)))
	return out, nil
}

// DeleteObject implements the S3 call. Deleting a missing key succeeds.
func (m *S3) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if err := start(ctx, &in.Key); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	objects, err := m.bucket(in.Bucket)
	if err != nil {
		return nil, err
	}
	delete(objects, aws.ToString(in.Key))
	return &s3.DeleteObjectOutput{}, nil
}

// Keys returns the keys of bucket under prefix, in order.
func (m *S3) Keys(bucket, prefix string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []string
	for k := range m.buckets[bucket] {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// Object returns the content of the object at key and whether there is
// one.
func (m *S3) Object(bucket, key string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	obj := m.buckets[bucket][key]
	if obj == nil {
		return nil, false
	}
	return slices.Clone(obj.body), true
}
