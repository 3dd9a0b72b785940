package candidate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
)

// These tests run the real SDK client against a recorded HTTP exchange:
// they show what goes over the wire, independently of any emulator.

type exchange struct {
	method, path  string
	header        http.Header
	contentLength int64
	body          []byte
}

// wire is an HTTP client that records requests and answers from a script.
type wire struct {
	mu       sync.Mutex
	seen     []exchange
	response func(req exchange) *http.Response
}

func (w *wire) Do(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
	}
	ex := exchange{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), contentLength: r.ContentLength, body: body}
	w.mu.Lock()
	w.seen = append(w.seen, ex)
	w.mu.Unlock()
	resp := w.response(ex)
	resp.Request = r
	return resp, nil
}

func (w *wire) requests() []exchange {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]exchange(nil), w.seen...)
}

func response(status int, header map[string]string, body string) *http.Response {
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	if h.Get("Content-Length") == "" {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status), Header: h,
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)),
	}
}

func s3Error(status int, code string) *http.Response {
	return response(status, map[string]string{"Content-Type": "application/xml"},
		`<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+code+`</Code><Message>scripted</Message><RequestId>r1</RequestId></Error>`)
}

func wireStore(t *testing.T, w *wire) *Store {
	t.Helper()
	client := s3.New(s3.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String("http://s3.test"),
		UsePathStyle: true,
		HTTPClient:   w,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "test"}, nil
		}),
	})
	s, err := New(Config{Client: client, Bucket: "bucket", SpoolDir: t.TempDir(), ConflictAttempts: 3, ConflictBackoff: time.Nanosecond})
	require.NoError(t, err)
	return s
}

func TestWirePutIsConditionalAndCarriesChecksums(t *testing.T) {
	t.Parallel()
	w := &wire{response: func(exchange) *http.Response {
		return response(200, map[string]string{"ETag": `"etag-1"`}, "")
	}}
	s := wireStore(t, w)
	key := Key{JobID: "job-42", Generation: 2, AttemptID: "attempt-b", Ext: "json"}
	content := []byte(`{"articles":120}`)
	sum := sha256.Sum256(content)

	res, err := s.Put(context.Background(), key, bytes.NewReader(content))
	require.NoError(t, err)
	require.Equal(t, `"etag-1"`, res.ETag)

	reqs := w.requests()
	require.Len(t, reqs, 1)
	put := reqs[0]
	require.Equal(t, http.MethodPut, put.method)
	require.Equal(t, "/bucket/candidates/job-42/g0000000002/attempt-b.json", put.path)
	require.Equal(t, content, put.body, "the body is sent as is, not aws-chunked")
	require.Equal(t, int64(len(content)), put.contentLength)
	for name, want := range map[string]string{
		"If-None-Match":                "*",
		"X-Amz-Checksum-Sha256":        base64.StdEncoding.EncodeToString(sum[:]),
		"X-Amz-Content-Sha256":         hex.EncodeToString(sum[:]),
		"X-Amz-Meta-Job-Id":            "job-42",
		"X-Amz-Meta-Generation":        "2",
		"X-Amz-Meta-Attempt-Id":        "attempt-b",
		"X-Amz-Meta-Sha256":            hex.EncodeToString(sum[:]),
		"Content-Type":                 "application/json",
		"X-Amz-Checksum-Crc32":         "",
		"X-Amz-Trailer":                "",
		"X-Amz-Decoded-Content-Length": "",
	} {
		require.Equal(t, want, put.header.Get(name), "header %s", name)
	}
}

// The SDK signs the hash computed while spooling and does not read the
// spool again to compute its own: given a wrong hash, it sends that.
func TestWireSignsWithTheSpoolHash(t *testing.T) {
	t.Parallel()
	w := &wire{response: func(exchange) *http.Response { return response(200, nil, "") }}
	s := wireStore(t, w)
	f, err := os.CreateTemp(t.TempDir(), "body")
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	_, err = f.WriteString("content")
	require.NoError(t, err)
	var pretend [sha256.Size]byte
	pretend[0] = 1
	_, err = s.upload(context.Background(), Key{JobID: "j", Generation: 1, AttemptID: "a", Ext: "bin"}, f, 7, pretend)
	require.NoError(t, err)
	require.Equal(t, hex.EncodeToString(pretend[:]), w.requests()[0].header.Get("X-Amz-Content-Sha256"))
}

func TestWirePreconditionFailedComparesWithExisting(t *testing.T) {
	t.Parallel()
	content := []byte("same")
	sum := sha256.Sum256(content)
	// A HEAD response has no body; its Content-Length is the object's.
	head := func(sha string) *http.Response {
		return response(200, map[string]string{
			"Content-Length": strconv.Itoa(len(content)), "ETag": `"etag-0"`, "X-Amz-Meta-Job-Id": "job-42", "X-Amz-Meta-Generation": "1",
			"X-Amz-Meta-Attempt-Id": "a", "X-Amz-Meta-Sha256": sha,
			"X-Amz-Checksum-Sha256": base64.StdEncoding.EncodeToString(sum[:]),
		}, "")
	}
	for _, tt := range []struct {
		name       string
		existing   string
		wantExists bool
	}{
		{"identical", hex.EncodeToString(sum[:]), false},
		{"different", strings.Repeat("0", 64), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := &wire{response: func(ex exchange) *http.Response {
				if ex.method == http.MethodHead {
					return head(tt.existing)
				}
				return s3Error(412, "PreconditionFailed")
			}}
			s := wireStore(t, w)
			key := Key{JobID: "job-42", Generation: 1, AttemptID: "a", Ext: "txt"}
			res, err := s.Put(context.Background(), key, bytes.NewReader(content))
			if tt.wantExists {
				require.ErrorIs(t, err, ErrExists)
				return
			}
			require.NoError(t, err, "an identical object is our earlier success")
			require.True(t, res.AlreadyExisted)
			require.Equal(t, `"etag-0"`, res.ETag)
			reqs := w.requests()
			require.Len(t, reqs, 2)
			require.Equal(t, "ENABLED", reqs[1].header.Get("X-Amz-Checksum-Mode"))
		})
	}
}

func TestWireConflictIsRetried(t *testing.T) {
	t.Parallel()
	calls := 0
	w := &wire{response: func(exchange) *http.Response {
		calls++
		if calls == 1 {
			return s3Error(409, "ConditionalRequestConflict")
		}
		return response(200, map[string]string{"ETag": `"etag-2"`}, "")
	}}
	s := wireStore(t, w)
	res, err := s.Put(context.Background(), Key{JobID: "job-42", Generation: 1, AttemptID: "a", Ext: "txt"}, strings.NewReader("content"))
	require.NoError(t, err)
	require.Equal(t, `"etag-2"`, res.ETag)
	reqs := w.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, []byte("content"), reqs[1].body, "the retry sends the whole body again")
}
