package s3mem_test

import (
	"context"
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

// What pkg/candidate's conformance run does not reach: the behaviour of
// the in-memory S3 that no candidate.Store call provokes.

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

func TestPutChecksLengthChecksumAndCondition(t *testing.T) {
	ctx := context.Background()
	m := newS3(t, nil)

	in := put("k", "abc")
	in.ContentLength = aws.Int64(4)
	if _, err := m.PutObject(ctx, in); code(err) != "IncompleteBody" {
		t.Errorf("a short body: %v", err)
	}
	in = put("k", "abc")
	in.ChecksumSHA256 = aws.String(base64.StdEncoding.EncodeToString(make([]byte, 32)))
	if _, err := m.PutObject(ctx, in); code(err) != "BadDigest" {
		t.Errorf("a wrong checksum: %v", err)
	}
	if _, ok := m.Object("b", "k"); ok {
		t.Error("a refused put stored something")
	}
	in = put("k", "abc")
	in.IfNoneMatch = aws.String("*")
	if _, err := m.PutObject(ctx, in); err != nil {
		t.Fatal(err)
	}
	in = put("k", "xyz")
	in.IfNoneMatch = aws.String("*")
	if _, err := m.PutObject(ctx, in); code(err) != "PreconditionFailed" {
		t.Errorf("a conditional put over an object: %v", err)
	}
	if _, err := m.PutObject(ctx, put("k", "xyz")); err != nil {
		t.Errorf("an unconditional put replaces: %v", err)
	}
	if body, _ := m.Object("b", "k"); string(body) != "xyz" {
		t.Errorf("the object is %q", body)
	}
	if _, err := m.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("other"), Key: aws.String("k")}); code(err) != "NoSuchBucket" {
		t.Errorf("another bucket: %v", err)
	}
}

func TestChecksumOnlyWithChecksumMode(t *testing.T) {
	ctx := context.Background()
	m := newS3(t, nil)
	sum := sha256.Sum256([]byte("abc"))
	in := put("k", "abc")
	in.ChecksumSHA256 = aws.String(base64.StdEncoding.EncodeToString(sum[:]))
	if _, err := m.PutObject(ctx, in); err != nil {
		t.Fatal(err)
	}
	head, err := m.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	if err != nil || head.ChecksumSHA256 != nil {
		t.Errorf("without ChecksumMode: %v, %v", head.ChecksumSHA256, err)
	}
	head, err = m.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(head.ChecksumSHA256) != aws.ToString(in.ChecksumSHA256) {
		t.Errorf("with ChecksumMode: %v, %v", head.ChecksumSHA256, err)
	}
	// An object whose content no longer matches its checksum fails the read
	// that reaches the end, as the SDK's validating reader does.
	if err := m.PutRaw("b", "bad", []byte("abd"), nil, aws.ToString(in.ChecksumSHA256)); err != nil {
		t.Fatal(err)
	}
	out, err := m.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("bad"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(out.Body); err == nil || !strings.Contains(err.Error(), "checksum did not match") {
		t.Errorf("reading a corrupt object: %v", err)
	}
	// A multipart upload's composite checksum ("<base64>-<parts>") is
	// returned as stored and checks nothing: the SDK does not validate a
	// body against one.
	if err := m.PutRaw("b", "multipart", []byte("abd"), nil, aws.ToString(in.ChecksumSHA256)+"-2"); err != nil {
		t.Fatal(err)
	}
	out, err = m.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("multipart"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(out.ChecksumSHA256) != aws.ToString(in.ChecksumSHA256)+"-2" {
		t.Fatalf("a composite checksum: %v, %v", out, err)
	}
	if body, err := io.ReadAll(out.Body); err != nil || string(body) != "abd" {
		t.Errorf("reading an object with a composite checksum: %q, %v", body, err)
	}
	if _, err := m.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("none")}); !errors.As(err, new(*types.NoSuchKey)) {
		t.Errorf("a missing key: %v", err)
	}
	if _, err := m.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("none")}); !errors.As(err, new(*types.NotFound)) {
		t.Errorf("a missing key: %v", err)
	}
}

func TestListPagesAndClock(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2100, 1, 1, 0, 0, 0, 999_000_000, time.UTC)
	m := newS3(t, func() time.Time { return now })
	for _, k := range []string{"p/c", "p/a", "q/z", "p/b", "p/d"} {
		if _, err := m.PutObject(ctx, put(k, k)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	in := &s3.ListObjectsV2Input{Bucket: aws.String("b"), Prefix: aws.String("p/"), MaxKeys: aws.Int32(3)}
	for pages := 0; ; pages++ {
		out, err := m.ListObjectsV2(ctx, in)
		if err != nil || pages > 3 {
			t.Fatal(err, pages)
		}
		for _, o := range out.Contents {
			got = append(got, aws.ToString(o.Key))
			if !o.LastModified.Equal(now.Truncate(time.Second)) {
				t.Errorf("LastModified %v", o.LastModified)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.ContinuationToken = out.NextContinuationToken
	}
	if strings.Join(got, ",") != "p/a,p/b,p/c,p/d" {
		t.Errorf("listed %v", got)
	}
	out, err := m.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("b"), StartAfter: aws.String("p/b")})
	if err != nil || len(out.Contents) != 3 || aws.ToString(out.Contents[0].Key) != "p/c" {
		t.Errorf("after p/b: %v %v", out, err)
	}
	if _, err := m.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("b"), Key: aws.String("none")}); err != nil {
		t.Errorf("deleting a missing key: %v", err)
	}
	if keys := m.Keys("b", "q/"); len(keys) != 1 || keys[0] != "q/z" {
		t.Errorf("keys %v", keys)
	}
}
