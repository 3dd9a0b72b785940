//go:build integration

package intake_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// On the template's candidates bucket, deployed locally (versioned, as
// template.yaml's is), a download URL serves the accepted bytes even
// after the key was deleted and written again with other bytes; a URL
// signed after that is refused, and so is one for a key whose current
// version is a delete marker.
func TestTheResultURLIsPinnedToTheAcceptedVersion(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	client := awstest.S3(t)
	tpl, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	only, err := testenv.Only(tpl, "CandidatesBucket")
	require.NoError(t, err)
	clients := localdeploy.Clients{S3: client}
	deployed, err := localdeploy.Deploy(t.Context(), only, awstest.Name(t, "pin"), cfg.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })
	bucket := deployed.Resources["CandidatesBucket"]
	v, err := client.GetBucketVersioning(t.Context(), &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	require.Equal(t, s3types.BucketVersioningStatusEnabled, v.Status, "the local bucket is versioned, as the template's")

	key, err := candidate.NewKey("job-42", 2, "worker-b", "json")
	require.NoError(t, err)
	const content = `{"articles":120}`
	candidates, err := candidate.New(candidate.Config{Client: client, Bucket: bucket})
	require.NoError(t, err)
	res, err := candidates.Put(t.Context(), key, strings.NewReader(content))
	require.NoError(t, err)
	accepted := jobs.Result{Key: res.Key.String(), SHA256: res.SHA256, Size: res.Size}
	p, err := intake.NewS3Presigner(intake.S3PresignerConfig{
		Client: client, Presign: s3.NewPresignClient(client), Bucket: bucket, EmulatorWithoutChecksums: true, // gofakes3
	})
	require.NoError(t, err)
	pinned, err := p.PresignGet(t.Context(), accepted, time.Minute)
	require.NoError(t, err)
	u, err := url.Parse(pinned)
	require.NoError(t, err)
	require.NotEmpty(t, u.Query().Get("versionId"))
	status, got := fetch(t, pinned)
	require.Equal(t, http.StatusOK, status, "%s", got)
	require.Equal(t, content, string(got))

	// The key deleted (as the sweeper may) and written again with other
	// bytes (on AWS only with If-None-Match, which a deleted key passes).
	_, err = client.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(accepted.Key)})
	require.NoError(t, err)
	_, err = client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(accepted.Key),
		Body: strings.NewReader(`{"articles":666,"forged":true}`), IfNoneMatch: aws.String("*")})
	require.NoError(t, err)
	status, got = fetch(t, pinned)
	require.Equal(t, http.StatusOK, status, "%s", got)
	require.Equal(t, content, string(got), "the URL still serves the accepted bytes")

	_, err = p.PresignGet(t.Context(), accepted, time.Minute)
	require.ErrorIs(t, err, intake.ErrResultChanged, "no URL for what the key holds now")

	_, err = client.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(accepted.Key)})
	require.NoError(t, err)
	_, err = p.PresignGet(t.Context(), accepted, time.Minute)
	require.Error(t, err, "no URL for a deleted result")
	status, got = fetch(t, pinned)
	require.Equal(t, http.StatusOK, status, "%s", got)
	require.Equal(t, content, string(got), "the accepted version outlives the deletes")
}
