package s3mem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// A candidate is written once: a put with If-None-Match "*" on a key that
// already holds an object is refused, as S3 refuses it, so a test can see
// that a stalled worker cannot overwrite its successor's result.
func ExampleS3() {
	ctx := context.Background()
	bucket, err := s3mem.New(s3mem.Config{Buckets: []string{"candidates"}}) // in a function: s3.NewFromConfig(cfg)
	if err != nil {
		panic(err)
	}
	put := func(body string) error {
		_, err := bucket.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String("candidates"),
			Key:           aws.String("job-42/2"),
			Body:          strings.NewReader(body),
			ContentLength: aws.Int64(int64(len(body))),
			IfNoneMatch:   aws.String("*"),
		})
		return err
	}

	fmt.Println(put("first"))
	var apiErr smithy.APIError
	if err := put("second"); errors.As(err, &apiErr) {
		fmt.Println(apiErr.ErrorCode())
	}
	// Output:
	// <nil>
	// PreconditionFailed
}
