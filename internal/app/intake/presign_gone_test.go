package intake_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
)

// headAnswering is a real S3 client whose HEADs an endpoint on 127.0.0.1
// answers with status and no body, as S3 answers every HEAD it refuses.
func headAnswering(t *testing.T, status int) *intake.S3Presigner {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	t.Cleanup(srv.Close)
	client := s3.NewFromConfig(aws.Config{
		Region: "eu-west-1", RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "not-a-secret", ""),
	}, func(o *s3.Options) { o.BaseEndpoint, o.UsePathStyle = aws.String(srv.URL), true })
	p, err := intake.NewS3Presigner(intake.S3PresignerConfig{
		Client: client, Presign: s3.NewPresignClient(client), Bucket: "fifoworker-candidates",
	})
	require.NoError(t, err)
	return p
}

// An accepted result deleted is gone, whichever way S3 says so: 404 to a
// role that may list the bucket (the local stack, which enforces no
// IAM), 403 to one that may not, as intake's (the SDK's code is then
// "Forbidden": a HEAD's answer has no body). Neither is reported as a
// refusal, which would send the operator to IAM; anything else is still
// the S3 error it was.
func TestS3PresignerTellsAResultGoneFromAFailedHead(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusForbidden, http.StatusNotFound} {
		_, err := headAnswering(t, status).PresignGet(t.Context(), accepted, time.Minute)
		require.ErrorIs(t, err, intake.ErrResultGone, "%d", status)
		require.ErrorIs(t, err, intake.ErrResultChanged, "%d: gone is one way of not being the accepted result", status)
		require.Contains(t, err.Error(), accepted.Key)
		require.NotContains(t, strings.ToLower(err.Error()), "forbidden", "%d: %v", status, err)
	}
	_, err := headAnswering(t, http.StatusInternalServerError).PresignGet(t.Context(), accepted, time.Minute)
	require.Error(t, err)
	require.NotErrorIs(t, err, intake.ErrResultChanged, "a failed HEAD says nothing of the object: %v", err)
}
