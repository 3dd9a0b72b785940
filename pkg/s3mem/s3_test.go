package s3mem_test

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// What the conformance suite (conformance_test.go) cannot check, as the
// S3 emulator or S3 itself would not show it: the answer S3 would give to
// a body shorter than its length, which the SDK never sends; objects
// corrupted at rest (PutRaw); and the helpers that read the bucket
// without a request.

// newS3 is an S3 with the bucket "b", on the clock now (nil: time.Now).
func newS3(t *testing.T, now func() time.Time) *s3mem.S3 {
	t.Helper()
	m, err := s3mem.New(s3mem.Config{Buckets: []string{"b"}, Now: now})
	require.NoError(t, err)
	return m
}

// newFaulty is a FaultyS3 with the bucket "b".
func newFaulty(t *testing.T) *s3mem.FaultyS3 {
	t.Helper()
	f, err := s3mem.NewFaultyS3(s3mem.Config{Buckets: []string{"b"}})
	require.NoError(t, err)
	return f
}

func head(key string) *s3.HeadObjectInput {
	return &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String(key)}
}

func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func put(key, body string) *s3.PutObjectInput {
	return &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String(key), Body: strings.NewReader(body)}
}

// A body shorter than its ContentLength, which the SDK's HTTP client
// refuses to send, is what S3 answers IncompleteBody to; nothing is stored.
func TestShortBodyIsIncompleteBody(t *testing.T) {
	m := newS3(t, nil)
	in := put("k", "abc")
	in.ContentLength = aws.Int64(4)
	if _, err := m.PutObject(t.Context(), in); code(err) != "IncompleteBody" {
		t.Errorf("a short body: %v", err)
	}
	if _, ok := m.Object("b", "k"); ok {
		t.Error("a refused put stored something")
	}
}

// An object whose content no longer matches its checksum fails the read
// that reaches the end, as the SDK's validating reader does; a multipart
// upload's composite checksum ("<base64>-<parts>") is returned as stored
// and checks nothing, as the SDK validates no body against one.
func TestCorruptObjectFailsTheRead(t *testing.T) {
	ctx := t.Context()
	m := newS3(t, nil)
	sum := sha256.Sum256([]byte("abc"))
	checksum := base64.StdEncoding.EncodeToString(sum[:])
	if err := m.PutRaw("b", "bad", []byte("abd"), nil, checksum); err != nil {
		t.Fatal(err)
	}
	out, err := m.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("bad")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(out.Body); err == nil || !strings.Contains(err.Error(), "checksum did not match") {
		t.Errorf("reading a corrupt object: %v", err)
	}
	if err := m.PutRaw("b", "multipart", []byte("abd"), nil, checksum+"-2"); err != nil {
		t.Fatal(err)
	}
	out, err = m.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("multipart"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(out.ChecksumSHA256) != checksum+"-2" {
		t.Fatalf("a composite checksum: %v, %v", out, err)
	}
	if body, err := io.ReadAll(out.Body); err != nil || string(body) != "abd" {
		t.Errorf("reading an object with a composite checksum: %q, %v", body, err)
	}
	if err := m.PutRaw("other", "k", nil, nil, ""); code(err) != "NoSuchBucket" {
		t.Errorf("PutRaw into another bucket: %v", err)
	}
}

// Keys and Object read the bucket as it is, without a request.
func TestKeysAndObject(t *testing.T) {
	m := newS3(t, nil)
	for _, k := range []string{"p/c", "p/a", "q/z"} {
		if _, err := m.PutObject(t.Context(), put(k, k)); err != nil {
			t.Fatal(err)
		}
	}
	if keys := m.Keys("b", "p/"); strings.Join(keys, ",") != "p/a,p/c" {
		t.Errorf("keys %v", keys)
	}
	if body, ok := m.Object("b", "q/z"); !ok || string(body) != "q/z" {
		t.Errorf("object %q, %v", body, ok)
	}
	if _, ok := m.Object("b", "none"); ok {
		t.Error("a missing key has an object")
	}
}
