package localdeploy

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// fakeS3 keeps no versions: bucket_test.go's buckets are never versioned.
func (f *fakeS3) PutBucketVersioning(context.Context, *s3.PutBucketVersioningInput, ...func(*s3.Options)) (*s3.PutBucketVersioningOutput, error) {
	return &s3.PutBucketVersioningOutput{}, nil
}

// versionedS3 records versioning.
type versionedS3 struct {
	fakeS3
	versioning []*s3.PutBucketVersioningInput
}

func (f *versionedS3) PutBucketVersioning(_ context.Context, in *s3.PutBucketVersioningInput, _ ...func(*s3.Options)) (*s3.PutBucketVersioningOutput, error) {
	f.versioning = append(f.versioning, in)
	return &s3.PutBucketVersioningOutput{}, nil
}

// The template's candidates bucket is versioned (intake pins its download
// URLs to versions), so the local bucket is too (a test's teardown,
// testenv.Teardown, then deletes every version).
func TestBucketVersioningIsAppliedLocally(t *testing.T) {
	t.Parallel()
	api := &versionedS3{}
	tpl := &samtemplate.Template{Resources: map[string]samtemplate.Resource{
		"B": {Type: "AWS::S3::Bucket", Properties: map[string]any{"VersioningConfiguration": map[string]any{"Status": "Enabled"}}},
	}}
	res, err := Deploy(context.Background(), tpl, "st", "eu-west-1", Clients{S3: api})
	require.NoError(t, err)
	require.Len(t, api.versioning, 1)
	require.Equal(t, res.Resources["B"], aws.ToString(api.versioning[0].Bucket))
	require.Equal(t, s3types.BucketVersioningStatusEnabled, api.versioning[0].VersioningConfiguration.Status)
	require.False(t, slices.ContainsFunc(res.Skipped, func(s string) bool { return strings.Contains(s, "VersioningConfiguration") }),
		"versioning is applied, not skipped: %v", res.Skipped)

	// Suspended or absent: nothing is asked of S3.
	for _, props := range []map[string]any{{"VersioningConfiguration": map[string]any{"Status": "Suspended"}}, {}} {
		api := &versionedS3{}
		tpl.Resources["B"] = samtemplate.Resource{Type: "AWS::S3::Bucket", Properties: props}
		_, err := Deploy(context.Background(), tpl, "st", "eu-west-1", Clients{S3: api})
		require.NoError(t, err)
		require.Empty(t, api.versioning, "%v", props)
	}
}
