package localdeploy

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// fakeS3 keeps no versions: bucket_test.go's buckets are never versioned.
func (f *fakeS3) PutBucketVersioning(context.Context, *s3.PutBucketVersioningInput, ...func(*s3.Options)) (*s3.PutBucketVersioningOutput, error) {
	return &s3.PutBucketVersioningOutput{}, nil
}

func (f *fakeS3) ListObjectVersions(context.Context, *s3.ListObjectVersionsInput, ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error) {
	return &s3.ListObjectVersionsOutput{}, nil
}

// versionedS3 records versioning and holds versions and delete markers.
type versionedS3 struct {
	fakeS3
	versioning []*s3.PutBucketVersioningInput
	versions   *s3.ListObjectVersionsOutput
	listErr    error
	deleted    []string // key@version
}

func (f *versionedS3) PutBucketVersioning(_ context.Context, in *s3.PutBucketVersioningInput, _ ...func(*s3.Options)) (*s3.PutBucketVersioningOutput, error) {
	f.versioning = append(f.versioning, in)
	return &s3.PutBucketVersioningOutput{}, nil
}

func (f *versionedS3) ListObjectVersions(context.Context, *s3.ListObjectVersionsInput, ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error) {
	return f.versions, f.listErr
}

func (f *versionedS3) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	f.deleted = append(f.deleted, aws.ToString(in.Key)+"@"+aws.ToString(in.VersionId))
	return &s3.DeleteObjectOutput{}, nil
}

// The template's candidates bucket is versioned (intake pins its download
// URLs to versions), so the local bucket is too; a local teardown then
// deletes every version and delete marker, or the bucket would not be
// empty.
func TestBucketVersioningIsAppliedLocallyAndTornDown(t *testing.T) {
	t.Parallel()
	api := &versionedS3{versions: &s3.ListObjectVersionsOutput{
		Versions: []s3types.ObjectVersion{
			{Key: aws.String("candidates/a"), VersionId: aws.String("v2")},
			{Key: aws.String("candidates/a"), VersionId: aws.String("v1")},
			{Key: aws.String("sweeper/cursor"), VersionId: aws.String("null")}, // written before versioning
		},
		DeleteMarkers: []s3types.DeleteMarkerEntry{{Key: aws.String("candidates/b"), VersionId: aws.String("m1")}},
	}}
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

	require.NoError(t, Teardown(context.Background(), res, Clients{S3: api}))
	require.ElementsMatch(t, []string{"candidates/a@v2", "candidates/a@v1", "sweeper/cursor@null", "candidates/b@m1"}, api.deleted)

	// A bucket already gone is torn down (S3 answers the listing with the
	// code alone: ListObjectVersions models no NoSuchBucket).
	api.listErr = &smithy.GenericAPIError{Code: "NoSuchBucket", Message: "The specified bucket does not exist"}
	require.NoError(t, Teardown(context.Background(), res, Clients{S3: api}))
	api.listErr = &smithy.GenericAPIError{Code: "AccessDenied"}
	require.Error(t, Teardown(context.Background(), res, Clients{S3: api}))

	// Suspended or absent: nothing is asked of S3.
	for _, props := range []map[string]any{{"VersioningConfiguration": map[string]any{"Status": "Suspended"}}, {}} {
		api := &versionedS3{versions: &s3.ListObjectVersionsOutput{}}
		tpl.Resources["B"] = samtemplate.Resource{Type: "AWS::S3::Bucket", Properties: props}
		_, err := Deploy(context.Background(), tpl, "st", "eu-west-1", Clients{S3: api})
		require.NoError(t, err)
		require.Empty(t, api.versioning, "%v", props)
	}
}
