package sweeper_test

import (
	"bytes"
	"context"
	"crypto/md5"
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
	"github.com/fifoworker/fifoworker/pkg/sweeper"
)

// fakeS3 is an in-memory bucket with the S3 semantics the candidate store
// and the cursor rely on: conditional puts (If-None-Match: *), listing in
// byte order with Prefix, StartAfter, MaxKeys (at most 1,000) and
// continuation, NoSuchKey for a missing key, and idempotent deletes.
// LastModified comes from the injected clock. It counts requests by
// operation and can fail chosen requests.
type fakeS3 struct {
	bucket string
	now    func() time.Time

	mu      sync.Mutex
	objects map[string]*fakeObject
	calls   map[string]int
	// fail, when set, is asked before each request takes effect; a non-nil
	// answer is the request's error.
	fail func(op, key string) error
	// deniesMissing answers a GetObject of a missing key with 403
	// AccessDenied, as S3 does to a caller without s3:ListBucket.
	deniesMissing bool
	// listed records each listing's StartAfter and the keys it returned.
	listed []listing
}

type listing struct {
	startAfter string
	keys       []string
}

type fakeObject struct {
	body     []byte
	meta     map[string]string
	checksum *string
	etag     string
	modified time.Time
}

var (
	_ candidate.S3API   = (*fakeS3)(nil)
	_ sweeper.CursorAPI = (*fakeS3)(nil)
)

func newFakeS3(now func() time.Time) *fakeS3 {
	return &fakeS3{bucket: "candidates-test", now: now, objects: map[string]*fakeObject{}, calls: map[string]int{}}
}

func apiError(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: "from fakeS3"}
}

// begin counts the request and returns the error it must fail with.
func (f *fakeS3) begin(op string, bucket, key *string) error {
	f.mu.Lock()
	f.calls[op]++
	fail := f.fail
	f.mu.Unlock()
	if aws.ToString(bucket) != f.bucket {
		return apiError("NoSuchBucket")
	}
	if fail != nil {
		return fail(op, aws.ToString(key))
	}
	return nil
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if err := f.begin("PutObject", in.Bucket, in.Key); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	if in.ContentLength != nil && *in.ContentLength != int64(len(body)) {
		return nil, apiError("IncompleteBody")
	}
	sum := md5.Sum(body)
	obj := &fakeObject{body: body, meta: map[string]string{}, checksum: in.ChecksumSHA256,
		etag: `"` + hex.EncodeToString(sum[:]) + `"`, modified: f.now()}
	for k, v := range in.Metadata {
		obj.meta[strings.ToLower(k)] = v
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := aws.ToString(in.Key)
	if aws.ToString(in.IfNoneMatch) == "*" && f.objects[key] != nil {
		return nil, apiError("PreconditionFailed")
	}
	f.objects[key] = obj
	return &s3.PutObjectOutput{ETag: aws.String(obj.etag)}, nil
}

func (f *fakeS3) object(key string) *fakeObject {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objects[key]
}

func (f *fakeS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if err := f.begin("GetObject", in.Bucket, in.Key); err != nil {
		return nil, err
	}
	obj := f.object(aws.ToString(in.Key))
	if obj == nil {
		if f.deniesMissing {
			return nil, apiError("AccessDenied")
		}
		return nil, &types.NoSuchKey{Message: aws.String("from fakeS3")}
	}
	return &s3.GetObjectOutput{
		Body: io.NopCloser(bytes.NewReader(obj.body)), ContentLength: aws.Int64(int64(len(obj.body))),
		ETag: aws.String(obj.etag), LastModified: aws.Time(obj.modified), Metadata: obj.meta, ChecksumSHA256: obj.checksum,
	}, nil
}

func (f *fakeS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if err := f.begin("HeadObject", in.Bucket, in.Key); err != nil {
		return nil, err
	}
	obj := f.object(aws.ToString(in.Key))
	if obj == nil {
		return nil, &types.NotFound{Message: aws.String("from fakeS3")}
	}
	return &s3.HeadObjectOutput{
		ContentLength: aws.Int64(int64(len(obj.body))), ETag: aws.String(obj.etag),
		LastModified: aws.Time(obj.modified), Metadata: obj.meta, ChecksumSHA256: obj.checksum,
	}, nil
}

func (f *fakeS3) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	if err := f.begin("ListObjectsV2", in.Bucket, in.Prefix); err != nil {
		return nil, err
	}
	after := max(aws.ToString(in.StartAfter), aws.ToString(in.ContinuationToken))
	maxKeys := 1000
	if in.MaxKeys != nil {
		maxKeys = min(int(*in.MaxKeys), 1000)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	for k := range f.objects {
		if strings.HasPrefix(k, aws.ToString(in.Prefix)) && k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // S3 lists in UTF-8 byte order, as Go compares strings
	out := &s3.ListObjectsV2Output{IsTruncated: aws.Bool(false), StartAfter: in.StartAfter}
	if len(keys) > maxKeys {
		keys = keys[:maxKeys]
		out.IsTruncated = aws.Bool(true)
		out.NextContinuationToken = aws.String(keys[len(keys)-1])
	}
	for _, k := range keys {
		obj := f.objects[k]
		out.Contents = append(out.Contents, types.Object{
			Key: aws.String(k), Size: aws.Int64(int64(len(obj.body))), ETag: aws.String(obj.etag), LastModified: aws.Time(obj.modified),
		})
	}
	out.KeyCount = aws.Int32(int32(len(keys)))
	f.listed = append(f.listed, listing{startAfter: aws.ToString(in.StartAfter), keys: keys})
	return out, nil
}

func (f *fakeS3) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if err := f.begin("DeleteObject", in.Bucket, in.Key); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objects, aws.ToString(in.Key))
	return &s3.DeleteObjectOutput{}, nil
}

// rawPut stores an object as any other client could, bypassing the store.
func (f *fakeS3) rawPut(key string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[key] = &fakeObject{body: body, meta: map[string]string{}, modified: f.now()}
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

// takeCalls returns the requests since the last call and starts again.
func (f *fakeS3) takeCalls() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = map[string]int{}
	return c
}

// takeListings returns the listings since the last call and starts again.
func (f *fakeS3) takeListings() []listing {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.listed
	f.listed = nil
	return l
}
