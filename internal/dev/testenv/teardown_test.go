package testenv

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
)

// The fakes embed the SDK's clients (nil) for the methods Deploy calls,
// which a teardown never does, and record what a teardown deletes.

type teardownSQS struct {
	*sqs.Client
	err     error
	deleted *[]string
}

func (f *teardownSQS) DeleteQueue(_ context.Context, in *sqs.DeleteQueueInput, _ ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error) {
	*f.deleted = append(*f.deleted, aws.ToString(in.QueueUrl))
	return &sqs.DeleteQueueOutput{}, f.err
}

type teardownDynamo struct {
	*dynamodb.Client
	err     error
	deleted *[]string
}

func (f *teardownDynamo) DeleteTable(_ context.Context, in *dynamodb.DeleteTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error) {
	*f.deleted = append(*f.deleted, aws.ToString(in.TableName))
	return &dynamodb.DeleteTableOutput{}, f.err
}

// teardownS3 holds versions and delete markers.
type teardownS3 struct {
	*s3.Client
	versions *s3.ListObjectVersionsOutput
	listErr  error
	deleted  []string // key@version, then the bucket
}

func (f *teardownS3) ListObjectVersions(context.Context, *s3.ListObjectVersionsInput, ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error) {
	return f.versions, f.listErr
}

func (f *teardownS3) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	f.deleted = append(f.deleted, aws.ToString(in.Key)+"@"+aws.ToString(in.VersionId))
	return &s3.DeleteObjectOutput{}, nil
}

func (f *teardownS3) DeleteBucket(_ context.Context, in *s3.DeleteBucketInput, _ ...func(*s3.Options)) (*s3.DeleteBucketOutput, error) {
	f.deleted = append(f.deleted, "bucket "+aws.ToString(in.Bucket))
	return &s3.DeleteBucketOutput{}, nil
}

// A teardown deletes in reverse order of creation, and what is already
// gone is not an error.
func TestTeardownDeletesInReverseAndWhatIsGoneIsNoError(t *testing.T) {
	t.Parallel()
	res := &localdeploy.Result{Created: []localdeploy.Created{
		{LogicalID: "Q", Type: "AWS::SQS::Queue", Ref: "http://q"},
		{LogicalID: "T", Type: "AWS::DynamoDB::Table", Ref: "st-T"},
		{LogicalID: "Topic", Type: "AWS::SNS::Topic", Ref: "arn:topic"}, // not ours to delete
		{LogicalID: "DLQ", Type: "AWS::SQS::Queue", Ref: "http://dlq"},
	}}
	var deleted []string
	q, ddb := &teardownSQS{deleted: &deleted}, &teardownDynamo{deleted: &deleted}
	c := localdeploy.Clients{SQS: q, DynamoDB: ddb}
	require.NoError(t, Teardown(context.Background(), res, c))
	require.Equal(t, []string{"http://dlq", "st-T", "http://q"}, deleted)

	q.err, ddb.err = &sqstypes.QueueDoesNotExist{}, &ddbtypes.ResourceNotFoundException{}
	require.NoError(t, Teardown(context.Background(), res, c))
	q.err = &smithy.GenericAPIError{Code: "AccessDenied"}
	err := Teardown(context.Background(), res, c)
	require.ErrorContains(t, err, "teardown Q (http://q)")
	require.ErrorContains(t, err, "AccessDenied")
}

// The template's candidates bucket is versioned (intake pins its download
// URLs to versions), so the local bucket is too; a teardown then deletes
// every version and delete marker, or the bucket would not be empty.
func TestTeardownEmptiesAVersionedBucket(t *testing.T) {
	t.Parallel()
	api := &teardownS3{versions: &s3.ListObjectVersionsOutput{
		Versions: []s3types.ObjectVersion{
			{Key: aws.String("candidates/a"), VersionId: aws.String("v2")},
			{Key: aws.String("candidates/a"), VersionId: aws.String("v1")},
			{Key: aws.String("sweeper/cursor"), VersionId: aws.String("null")}, // written before versioning
		},
		DeleteMarkers: []s3types.DeleteMarkerEntry{{Key: aws.String("candidates/b"), VersionId: aws.String("m1")}},
	}}
	res := &localdeploy.Result{Created: []localdeploy.Created{{LogicalID: "B", Type: "AWS::S3::Bucket", Ref: "st-b"}}}
	require.NoError(t, Teardown(context.Background(), res, localdeploy.Clients{S3: api}))
	require.ElementsMatch(t, []string{"candidates/a@v2", "candidates/a@v1", "sweeper/cursor@null", "candidates/b@m1", "bucket st-b"}, api.deleted)
	require.Equal(t, "bucket st-b", api.deleted[len(api.deleted)-1], "the bucket last, once empty")

	// A bucket already gone is torn down (S3 answers the listing with the
	// code alone: ListObjectVersions models no NoSuchBucket).
	api.listErr = &smithy.GenericAPIError{Code: "NoSuchBucket", Message: "The specified bucket does not exist"}
	require.NoError(t, Teardown(context.Background(), res, localdeploy.Clients{S3: api}))
	api.listErr = &smithy.GenericAPIError{Code: "AccessDenied"}
	require.ErrorContains(t, Teardown(context.Background(), res, localdeploy.Clients{S3: api}), "AccessDenied")
}
