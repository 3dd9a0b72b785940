package worker_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/fifoworker/fifoworker/pkg/candidate"
)

// fakeS3 is an in-memory bucket with the S3 behaviour candidates rely on:
// If-None-Match: * refuses an existing key with 412, the declared
// Content-Length and SHA-256 checksum are checked against the body (400
// BadDigest, as S3 does), and metadata and checksum come back on Get and
// Head. Errors queued with failPuts are returned by the next PutObject
// calls, before the put takes effect.
type fakeS3 struct {
	bucket string

	mu       sync.Mutex
	objects  map[string]fakeObject
	puts     int
	failPuts []error
}

type fakeObject struct {
	body     []byte
	meta     map[string]string
	checksum string // base64 SHA-256, as S3 returns it
	etag     string
	modified time.Time
}

var _ candidate.S3API = (*fakeS3)(nil)

func newFakeS3() *fakeS3 {
	return &fakeS3{bucket: "candidates-test", objects: map[string]fakeObject{}}
}

func apiError(code, msg string) error { return &smithy.GenericAPIError{Code: code, Message: msg} }

func (f *fakeS3) checkBucket(b *string) error {
	if aws.ToString(b) != f.bucket {
		return apiError("NoSuchBucket", "fakeS3: no bucket "+aws.ToString(b))
	}
	return nil
}

func (f *fakeS3) PutObject(ctx context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if err := f.checkBucket(in.Bucket); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	if in.ContentLength != nil && *in.ContentLength != int64(len(body)) {
		return nil, apiError("IncompleteBody", "fakeS3: body shorter than Content-Length")
	}
	sum := sha256.Sum256(body)
	checksum := base64.StdEncoding.EncodeToString(sum[:])
	if c := aws.ToString(in.ChecksumSHA256); c != "" && c != checksum {
		return nil, apiError("BadDigest", "fakeS3: the SHA-256 checksum does not match the body")
	}
	etag := md5.Sum(body)
	obj := fakeObject{body: body, meta: map[string]string{}, checksum: checksum,
		etag: `"` + hex.EncodeToString(etag[:]) + `"`, modified: time.Now()}
	for k, v := range in.Metadata {
		obj.meta[strings.ToLower(k)] = v
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts++
	if len(f.failPuts) > 0 {
		err := f.failPuts[0]
		f.failPuts = f.failPuts[1:]
		return nil, err
	}
	key := aws.ToString(in.Key)
	if _, exists := f.objects[key]; exists && aws.ToString(in.IfNoneMatch) == "*" {
		return nil, apiError("PreconditionFailed", "fakeS3: the key exists")
	}
	f.objects[key] = obj
	return &s3.PutObjectOutput{ETag: aws.String(obj.etag), ChecksumSHA256: aws.String(checksum)}, nil
}

func (f *fakeS3) lookup(bucket, key *string) (fakeObject, bool, error) {
	if err := f.checkBucket(bucket); err != nil {
		return fakeObject{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	obj, ok := f.objects[aws.ToString(key)]
	return obj, ok, nil
}

func (f *fakeS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	obj, ok, err := f.lookup(in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &types.NoSuchKey{Message: aws.String("fakeS3: no such key")}
	}
	return &s3.GetObjectOutput{
		Body: io.NopCloser(bytes.NewReader(obj.body)), ContentLength: aws.Int64(int64(len(obj.body))),
		ETag: aws.String(obj.etag), LastModified: aws.Time(obj.modified), Metadata: obj.meta,
		ChecksumSHA256: aws.String(obj.checksum),
	}, nil
}

func (f *fakeS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	obj, ok, err := f.lookup(in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &types.NotFound{Message: aws.String("fakeS3: no such key")}
	}
	return &s3.HeadObjectOutput{
		ContentLength: aws.Int64(int64(len(obj.body))), ETag: aws.String(obj.etag),
		LastModified: aws.Time(obj.modified), Metadata: obj.meta, ChecksumSHA256: aws.String(obj.checksum),
	}, nil
}

// ListObjectsV2 returns every key under the prefix in one page.
func (f *fakeS3) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	if err := f.checkBucket(in.Bucket); err != nil {
		return nil, err
	}
	out := &s3.ListObjectsV2Output{IsTruncated: aws.Bool(false)}
	for _, k := range f.keys() {
		if !strings.HasPrefix(k, aws.ToString(in.Prefix)) {
			continue
		}
		obj, _, _ := f.lookup(in.Bucket, aws.String(k))
		out.Contents = append(out.Contents, types.Object{Key: aws.String(k), Size: aws.Int64(int64(len(obj.body))),
			ETag: aws.String(obj.etag), LastModified: aws.Time(obj.modified)})
	}
	out.KeyCount = aws.Int32(int32(len(out.Contents)))
	return out, nil
}

func (f *fakeS3) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if err := f.checkBucket(in.Bucket); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objects, aws.ToString(in.Key))
	return &s3.DeleteObjectOutput{}, nil
}

// keys returns every key in the bucket, sorted.
func (f *fakeS3) keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]string, 0, len(f.objects))
	for k := range f.objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (f *fakeS3) putCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts
}

func (f *fakeS3) failNextPuts(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failPuts = append(f.failPuts, errs...)
}
