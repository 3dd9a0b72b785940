package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// MissingKeysAsS3Answers makes a client answer a GetObject or HeadObject
// of a missing key as S3 answers the caller whose role is p: 404 only
// when the role may list the bucket, 403 otherwise (S3's
// GetObject reference: "If you don't have the s3:ListBucket permission,
// Amazon S3 returns an HTTP status code 403 Access Denied error"). The
// local S3 enforces no IAM and always answers 404, so without this a
// function that reads a key that may be missing looks fine locally and is
// refused on AWS. The 403 is the SDK's: code AccessDenied for a GET,
// Forbidden for a HEAD (S3 answers a HEAD with no body). The listing S3 checks is of the whole bucket, with no
// prefix: a ListBucket grant limited by s3:prefix does not make the 404.
func MissingKeysAsS3Answers(p RolePolicy, names IAMNames) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("testenv.missingKeysAsS3Answers",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				bucket, key, ok := objectRead(in.Parameters)
				if err == nil || !ok || !isMissingKey(err) {
					return out, md, err
				}
				list := names.listing("s3:ListBucket", bucket, nil)
				list.Context = nil // S3's check carries no prefix
				mayList, perr := p.Allows(list)
				if perr != nil {
					return out, md, errors.Join(err, perr)
				}
				if mayList {
					return out, md, err
				}
				return out, md, refusal(in.Parameters, fmt.Sprintf("testenv: %s may not list %s, so S3 answers a read of the missing key %s with 403",
					p.Role, strings.TrimSpace(aws.ToString(bucket)), aws.ToString(key)))
			}), middleware.After)
	}
}

// refusal is S3's 403 as the SDK reports it: an API error inside a
// response error that carries the status. A GetObject's answer has a body
// with the code AccessDenied; a HEAD's has none, so the SDK names the
// code after the status, Forbidden.
func refusal(params any, msg string) error {
	code := "AccessDenied"
	if _, ok := params.(*s3.HeadObjectInput); ok {
		code = "Forbidden"
	}
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusForbidden}},
		Err:      &smithy.GenericAPIError{Code: code, Message: msg},
	}}
}

func objectRead(params any) (bucket, key *string, ok bool) {
	switch in := params.(type) {
	case *s3.GetObjectInput:
		return in.Bucket, in.Key, true
	case *s3.HeadObjectInput:
		return in.Bucket, in.Key, true
	}
	return nil, nil, false
}

func isMissingKey(err error) bool {
	var noKey *types.NoSuchKey
	var notFound *types.NotFound
	return errors.As(err, &noKey) || errors.As(err, &notFound)
}
