package candidate_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/fifoworker/fifoworker/pkg/candidate"
)

// fakeS3 is an in-memory bucket with S3's conditional-put semantics, for
// the unit tests. Errors injected with failPuts are returned by the next
// PutObject calls, in order, before the put takes effect.
type fakeS3 struct {
	bucket string

	mu       sync.Mutex
	objects  map[string]*fakeObject
	failPuts []error
	puts     int // PutObject calls
	putTimes []time.Time
	discard  bool // keep only the hash of bodies (large-object tests)
	pageSize int  // ListObjectsV2 page size, small to exercise pagination
	// putStarted, when set, is closed by the first PutObject call, which
	// then blocks until its context ends.
	putStarted chan struct{}
}

type fakeObject struct {
	body     []byte
	sha256   string // of the body, when discard dropped it
	size     int64
	meta     map[string]string
	checksum *string
	etag     string
	modified time.Time
	// endErr, when set, ends the body GetObject returns instead of io.EOF,
	// as the SDK's checksum-validating reader does on a mismatch.
	endErr error
	// pauseAt, when positive, makes the body return (0, nil) once after
	// that many bytes: a body that has not shown whether more follows.
	pauseAt int
}

// The fake is a candidate.S3API like *s3.Client: callers outside the
// package can name the interface the store takes.
var _ candidate.S3API = (*fakeS3)(nil)

func newFakeS3() *fakeS3 {
	return &fakeS3{bucket: "candidates-test", objects: map[string]*fakeObject{}, pageSize: 2}
}

func apiError(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: "injected by fakeS3"}
}

func (f *fakeS3) checkBucket(b *string) error {
	if aws.ToString(b) != f.bucket {
		return apiError("NoSuchBucket")
	}
	return nil
}

func (f *fakeS3) PutObject(ctx context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if err := f.checkBucket(in.Bucket); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.puts++
	f.putTimes = append(f.putTimes, time.Now())
	started := f.putStarted
	f.putStarted = nil
	f.mu.Unlock()
	if started != nil {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}

	obj := &fakeObject{meta: map[string]string{}, checksum: in.ChecksumSHA256, modified: time.Now()}
	for k, v := range in.Metadata {
		obj.meta[strings.ToLower(k)] = v
	}
	h, m := sha256.New(), md5.New()
	var body bytes.Buffer
	w := io.MultiWriter(h, m)
	if !f.discard {
		w = io.MultiWriter(h, m, &body)
	}
	n, err := io.Copy(w, in.Body)
	if err != nil {
		return nil, err
	}
	if in.ContentLength != nil && *in.ContentLength != n {
		return nil, apiError("IncompleteBody")
	}
	obj.body, obj.size = body.Bytes(), n
	obj.sha256 = hex.EncodeToString(h.Sum(nil))
	obj.etag = `"` + hex.EncodeToString(m.Sum(nil)) + `"`

	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.failPuts) > 0 {
		err := f.failPuts[0]
		f.failPuts = f.failPuts[1:]
		return nil, err
	}
	key := aws.ToString(in.Key)
	if aws.ToString(in.IfNoneMatch) == "*" && f.objects[key] != nil {
		return nil, apiError("PreconditionFailed")
	}
	f.objects[key] = obj
	return &s3.PutObjectOutput{ETag: aws.String(obj.etag)}, nil
}

func (f *fakeS3) lookup(bucket, key *string) (*fakeObject, error) {
	if err := f.checkBucket(bucket); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	obj := f.objects[aws.ToString(key)]
	if obj == nil {
		return nil, nil
	}
	c := *obj
	c.meta = make(map[string]string, len(obj.meta))
	for k, v := range obj.meta {
		c.meta[k] = v
	}
	return &c, nil
}

func (f *fakeS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	obj, err := f.lookup(in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, &types.NoSuchKey{Message: aws.String("injected by fakeS3")}
	}
	var body io.Reader = bytes.NewReader(obj.body)
	if obj.pauseAt > 0 {
		at := min(obj.pauseAt, len(obj.body))
		body = io.MultiReader(bytes.NewReader(obj.body[:at]), &pauseOnce{}, bytes.NewReader(obj.body[at:]))
	}
	if obj.endErr != nil {
		body = io.MultiReader(body, errReader{obj.endErr})
	}
	return &s3.GetObjectOutput{
		Body:           io.NopCloser(body),
		ContentLength:  aws.Int64(obj.size),
		ETag:           aws.String(obj.etag),
		LastModified:   aws.Time(obj.modified),
		Metadata:       obj.meta,
		ChecksumSHA256: obj.checksum,
	}, nil
}

func (f *fakeS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	obj, err := f.lookup(in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, &types.NotFound{Message: aws.String("injected by fakeS3")}
	}
	return &s3.HeadObjectOutput{
		ContentLength:  aws.Int64(obj.size),
		ETag:           aws.String(obj.etag),
		LastModified:   aws.Time(obj.modified),
		Metadata:       obj.meta,
		ChecksumSHA256: obj.checksum,
	}, nil
}

func (f *fakeS3) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	if err := f.checkBucket(in.Bucket); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	for k := range f.objects {
		if strings.HasPrefix(k, aws.ToString(in.Prefix)) && k > aws.ToString(in.ContinuationToken) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := &s3.ListObjectsV2Output{}
	if len(keys) > f.pageSize {
		keys = keys[:f.pageSize]
		out.IsTruncated = aws.Bool(true)
		out.NextContinuationToken = aws.String(keys[len(keys)-1])
	}
	for _, k := range keys {
		obj := f.objects[k]
		out.Contents = append(out.Contents, types.Object{
			Key: aws.String(k), Size: aws.Int64(obj.size), ETag: aws.String(obj.etag), LastModified: aws.Time(obj.modified),
		})
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

// failNextPuts makes the next PutObject calls fail with errs, in order.
func (f *fakeS3) failNextPuts(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failPuts = append(f.failPuts, errs...)
}

func (f *fakeS3) putCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts
}

// putCallTimes returns when each PutObject call was made.
func (f *fakeS3) putCallTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.putTimes...)
}

// object returns a copy of the object at key, or nil.
func (f *fakeS3) object(t testing.TB, key string) *fakeObject {
	t.Helper()
	obj, err := f.lookup(aws.String(f.bucket), aws.String(key))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// tamper replaces the body GetObject returns for key, leaving its headers
// (metadata, Content-Length, checksum) alone: what corruption on disk or in
// transit, or a writer that lied about its hash, looks like.
func (f *fakeS3) tamper(t testing.TB, key string, body []byte, endErr error) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	obj := f.objects[key]
	if obj == nil {
		t.Fatalf("tamper: no object at %s", key)
	}
	obj.body, obj.endErr = body, endErr
}

// pauseAfter makes the body GetObject returns for key pause once, returning
// (0, nil), after n bytes.
func (f *fakeS3) pauseAfter(t testing.TB, key string, n int) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	obj := f.objects[key]
	if obj == nil {
		t.Fatalf("pauseAfter: no object at %s", key)
	}
	obj.pauseAt = n
}

// pauseOnce reads nothing, once without an error and then with io.EOF.
type pauseOnce struct{ done bool }

func (p *pauseOnce) Read([]byte) (int, error) {
	if p.done {
		return 0, io.EOF
	}
	p.done = true
	return 0, nil
}

// rawPut stores an object as any other S3 client could, bypassing Store.
func (f *fakeS3) rawPut(key string, body []byte, meta map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[key] = &fakeObject{body: body, size: int64(len(body)), meta: meta, etag: fmt.Sprintf(`"%x"`, md5.Sum(body)), modified: time.Now()}
}

// statusError is an error that has an HTTP status and no S3 error code,
// like the SDK's error for a HEAD response without a body.
type statusError struct{ status int }

func (e statusError) Error() string {
	return fmt.Sprintf("http %d %s", e.status, http.StatusText(e.status))
}
func (e statusError) HTTPStatusCode() int { return e.status }
