package intake_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/intake"
)

// TestS3Presigner signs with the real SDK (signing sends no request): the
// URL names the bucket and exactly the key, and expires after the TTL.
func TestS3Presigner(t *testing.T) {
	t.Parallel()
	client := s3.NewFromConfig(aws.Config{
		Region:      "eu-west-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "not-a-secret", ""),
	})
	p, err := intake.NewS3Presigner(s3.NewPresignClient(client), "fifoworker-candidates")
	require.NoError(t, err)

	raw, err := p.PresignGet(t.Context(), "candidates/job-42/g0000000002/worker-b.json", 90*time.Second)
	require.NoError(t, err)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	require.Equal(t, "https", u.Scheme)
	require.Equal(t, "fifoworker-candidates.s3.eu-west-1.amazonaws.com", u.Host)
	require.Equal(t, "/candidates/job-42/g0000000002/worker-b.json", u.Path)
	q := u.Query()
	require.Equal(t, "90", q.Get("X-Amz-Expires"))
	require.Equal(t, "AWS4-HMAC-SHA256", q.Get("X-Amz-Algorithm"))
	require.Equal(t, "host", q.Get("X-Amz-SignedHeaders"))
	require.NotEmpty(t, q.Get("X-Amz-Signature"))

	_, err = intake.NewS3Presigner(nil, "b")
	require.Error(t, err)
	_, err = intake.NewS3Presigner(s3.NewPresignClient(client), "")
	require.Error(t, err)
}
