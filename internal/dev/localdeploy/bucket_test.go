package localdeploy

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

type fakeS3 struct {
	headErr error
	created []*s3.CreateBucketInput
}

func (f *fakeS3) HeadBucket(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error) {
	return &s3.HeadBucketOutput{}, f.headErr
}

func (f *fakeS3) CreateBucket(_ context.Context, in *s3.CreateBucketInput, _ ...func(*s3.Options)) (*s3.CreateBucketOutput, error) {
	f.created = append(f.created, in)
	return &s3.CreateBucketOutput{}, nil
}

func deployOneBucket(t *testing.T, region string, api *fakeS3) error {
	t.Helper()
	tpl := &samtemplate.Template{Resources: map[string]samtemplate.Resource{
		"B": {Type: "AWS::S3::Bucket", Properties: map[string]any{}},
	}}
	_, err := Deploy(context.Background(), tpl, "st", region, Clients{S3: api})
	return err
}

func TestBucketsOutsideUSEast1CarryTheirRegion(t *testing.T) {
	t.Parallel()
	eu := &fakeS3{headErr: &s3types.NotFound{}}
	require.NoError(t, deployOneBucket(t, "eu-west-1", eu))
	require.Len(t, eu.created, 1)
	require.Equal(t, s3types.BucketLocationConstraint("eu-west-1"), eu.created[0].CreateBucketConfiguration.LocationConstraint)

	us := &fakeS3{headErr: &s3types.NotFound{}}
	require.NoError(t, deployOneBucket(t, "us-east-1", us))
	require.Nil(t, us.created[0].CreateBucketConfiguration, "S3 refuses a us-east-1 location constraint")

	exists := &fakeS3{}
	require.NoError(t, deployOneBucket(t, "eu-west-1", exists))
	require.Empty(t, exists.created, "an existing bucket is reused")
}

func TestABucketThatCannotBeCheckedIsAnErrorNotACreate(t *testing.T) {
	t.Parallel()
	forbidden := &fakeS3{headErr: errors.New("403 Forbidden")}
	err := deployOneBucket(t, "eu-west-1", forbidden)
	require.ErrorContains(t, err, "403 Forbidden")
	require.Empty(t, forbidden.created)
}
