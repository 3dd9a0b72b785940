package testenv

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"
)

// missingKeyS3 is an S3 endpoint on 127.0.0.1 that holds nothing: every
// GET answers 404 NoSuchKey and every HEAD 404, as the local S3 does.
func missingKeyS3(t *testing.T, p RolePolicy, names IAMNames) *s3.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		if r.Method != http.MethodHead {
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>none</Message></Error>`))
		}
	}))
	t.Cleanup(srv.Close)
	return s3.New(s3.Options{
		Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials:      aws.AnonymousCredentials{},
		RetryMaxAttempts: 1,
		APIOptions:       []func(*middleware.Stack) error{MissingKeysAsS3Answers(p, names)},
	})
}

func TestAMissingKeyIsA403ToARoleThatMayNotListTheWholeBucket(t *testing.T) {
	t.Parallel()
	d := iamDeployment(t)
	names := IAMNames{Buckets: map[string]string{"st-b": "arn:aws:s3:::st-b"}}
	limited, err := FunctionRole(d, "Fn", "logs")
	require.NoError(t, err)
	whole := limited
	whole.Statements = append([]IAMStatement{{Sid: "All", Allow: true, Actions: []string{"s3:ListBucket"}, Resources: []string{"arn:aws:s3:::st-b"}}}, limited.Statements...)

	for _, c := range []struct {
		name   string
		policy RolePolicy
		denied bool
	}{
		{"a listing limited by s3:prefix", limited, true},
		{"a listing of the whole bucket", whole, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			client := missingKeyS3(t, c.policy, names)
			_, getErr := client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String("st-b"), Key: aws.String("sweeper/cursor")})
			_, headErr := client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("st-b"), Key: aws.String("sweeper/cursor")})
			// A GET's 403 has a body naming AccessDenied; a HEAD's has
			// none, so the SDK reports the status's name, Forbidden.
			for code, err := range map[string]error{"AccessDenied": getErr, "Forbidden": headErr} {
				require.Error(t, err)
				var api smithy.APIError
				require.ErrorAs(t, err, &api)
				var noKey *s3types.NoSuchKey
				var notFound *s3types.NotFound
				missing := errors.As(err, &noKey) || errors.As(err, &notFound)
				if c.denied {
					require.Equal(t, code, api.ErrorCode(), "%v", err)
					var status interface{ HTTPStatusCode() int }
					require.ErrorAs(t, err, &status, "the status travels with the error, as the SDK's")
					require.Equal(t, http.StatusForbidden, status.HTTPStatusCode())
					require.False(t, missing, "a 403 says nothing of the key: %v", err)
				} else {
					require.True(t, missing, "the 404 is kept for a role that may list: %v", err)
				}
			}
		})
	}
}
