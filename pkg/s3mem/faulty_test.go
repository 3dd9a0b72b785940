package s3mem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

func TestFaultyCountsAndPasses(t *testing.T) {
	ctx := context.Background()
	f := newFaulty(t)
	before := time.Now()
	for _, k := range []string{"k1", "k2"} {
		if _, err := f.PutObject(ctx, put(k, k)); err != nil {
			t.Fatal(err)
		}
	}
	in := put("k1", "again")
	in.IfNoneMatch = aws.String("*")
	if _, err := f.PutObject(ctx, in); code(err) != "PreconditionFailed" {
		t.Errorf("the in-memory S3's answer does not come through: %v", err)
	}
	if _, err := f.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k1")}); err != nil {
		t.Error(err)
	}
	if _, err := f.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k2")}); err != nil {
		t.Error(err)
	}
	if out, err := f.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("b")}); err != nil || len(out.Contents) != 2 {
		t.Errorf("list: %v, %v", out, err)
	}
	if _, err := f.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("b"), Key: aws.String("k2")}); err != nil {
		t.Error(err)
	}
	if keys := f.Keys("b", ""); len(keys) != 1 || keys[0] != "k1" {
		t.Errorf("keys %v", keys)
	}

	if n := f.Calls(s3mem.OpPutObject); n != 3 {
		t.Errorf("%d puts", n)
	}
	times := f.CallTimes(s3mem.OpPutObject)
	if len(times) != 3 || times[0].Before(before) || times[2].Before(times[0]) {
		t.Errorf("put times %v", times)
	}
	want := map[string]int{
		s3mem.OpPutObject: 3, s3mem.OpHeadObject: 1, s3mem.OpGetObject: 1,
		s3mem.OpListObjectsV2: 1, s3mem.OpDeleteObject: 1,
	}
	got := f.TakeCalls()
	if len(got) != len(want) {
		t.Errorf("calls %v", got)
	}
	for op, n := range want {
		if got[op] != n {
			t.Errorf("%d calls of %s, want %d", got[op], op, n)
		}
	}
	if n := f.Calls(s3mem.OpPutObject); n != 0 || len(f.TakeCalls()) != 0 {
		t.Errorf("TakeCalls did not start again: %d puts", n)
	}
}

func TestFaultyFailsPutsInOrderAfterReadingTheBody(t *testing.T) {
	ctx := context.Background()
	f := newFaulty(t)
	first, second := errors.New("first"), errors.New("second")
	f.FailNextPuts(first)
	f.FailNextPuts(second)
	for _, want := range []error{first, second} {
		body := strings.NewReader("content")
		in := put("k", "")
		in.Body = body
		if _, err := f.PutObject(ctx, in); !errors.Is(err, want) {
			t.Errorf("got %v, want %v", err, want)
		}
		if body.Len() != 0 {
			t.Errorf("%d bytes of a failed put's body were left unread", body.Len())
		}
	}
	if _, ok := f.Object("b", "k"); ok {
		t.Error("a failed put stored something")
	}
	if _, err := f.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("nil-body")}); err != nil {
		t.Errorf("the queue is empty, and a put without a body is fine: %v", err)
	}
	f.FailNextPuts(first)
	if _, err := f.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("nil-body")}); !errors.Is(err, first) {
		t.Errorf("a put without a body: %v", err)
	}
	if n := f.Calls(s3mem.OpPutObject); n != 4 {
		t.Errorf("failed puts are counted too: %d", n)
	}
}

func TestFaultyFailsChosenRequests(t *testing.T) {
	ctx := context.Background()
	f := newFaulty(t)
	if _, err := f.PutObject(ctx, put("p/k", "x")); err != nil {
		t.Fatal(err)
	}
	denied, queued := errors.New("denied"), errors.New("queued")
	var asked []string
	f.Fail(func(op, key string) error {
		asked = append(asked, op+" "+key)
		if key == "p/k" || key == "p/" {
			return denied
		}
		return nil
	})
	if _, err := f.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("p/k")}); !errors.Is(err, denied) {
		t.Errorf("get: %v", err)
	}
	if _, err := f.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("p/k")}); !errors.Is(err, denied) {
		t.Errorf("head: %v", err)
	}
	if _, err := f.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("b"), Prefix: aws.String("p/")}); !errors.Is(err, denied) {
		t.Errorf("list: %v", err)
	}
	if _, err := f.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("b"), Key: aws.String("p/k")}); !errors.Is(err, denied) {
		t.Errorf("delete: %v", err)
	}
	if _, err := f.PutObject(ctx, put("p/k", "y")); !errors.Is(err, denied) {
		t.Errorf("put: %v", err)
	}
	if body, _ := f.Object("b", "p/k"); string(body) != "x" {
		t.Errorf("failed requests changed the object: %q", body)
	}
	if _, err := f.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("q")}); code(err) != "NoSuchKey" {
		t.Errorf("a request the function lets through: %v", err)
	}
	f.FailNextPuts(queued)
	if _, err := f.PutObject(ctx, put("p/k", "y")); !errors.Is(err, queued) {
		t.Errorf("a queued error comes first: %v", err)
	}
	want := "GetObject p/k,HeadObject p/k,ListObjectsV2 p/,DeleteObject p/k,PutObject p/k,GetObject q"
	if got := strings.Join(asked, ","); got != want {
		t.Errorf("asked %s, want %s", got, want)
	}
	f.Fail(nil)
	if _, err := f.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("b"), Key: aws.String("p/k")}); err != nil {
		t.Errorf("after Fail(nil): %v", err)
	}
}

func TestFaultyHoldsAPutUntilItsContextEnds(t *testing.T) {
	f := newFaulty(t)
	f.FailNextPuts(errors.New("after the held one"))
	held := f.HoldNextPut()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-held; cancel() }()
	body := strings.NewReader("content")
	in := put("k", "")
	in.Body = body
	if _, err := f.PutObject(ctx, in); !errors.Is(err, context.Canceled) {
		t.Errorf("the held put: %v", err)
	}
	if body.Len() != len("content") {
		t.Error("the held put read its body")
	}
	if _, ok := f.Object("b", "k"); ok {
		t.Error("the held put stored something")
	}
	if _, err := f.PutObject(context.Background(), put("k", "x")); err == nil || err.Error() != "after the held one" {
		t.Errorf("the put after the held one: %v", err)
	}
	if _, err := f.PutObject(context.Background(), put("k", "x")); err != nil {
		t.Errorf("only one put is held: %v", err)
	}
	if n := f.Calls(s3mem.OpPutObject); n != 3 {
		t.Errorf("%d puts counted", n)
	}
}
