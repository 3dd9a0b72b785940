package testenv

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
)

// What a teardown asks of the deployment's clients besides what Deploy
// does: localdeploy's clients declare only what a deployment calls, and
// the SDK's clients, which the tests pass, do both.
type (
	queueDeleter interface {
		DeleteQueue(ctx context.Context, in *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
	}
	tableDeleter interface {
		DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
	}
	bucketDeleter interface {
		s3.ListObjectVersionsAPIClient
		DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
		DeleteBucket(ctx context.Context, in *s3.DeleteBucketInput, optFns ...func(*s3.Options)) (*s3.DeleteBucketOutput, error)
	}
)

var (
	_ queueDeleter  = (*sqs.Client)(nil)
	_ tableDeleter  = (*dynamodb.Client)(nil)
	_ bucketDeleter = (*s3.Client)(nil)
)

// Teardown deletes what a deployment created, with the clients that
// created it, in reverse order: buckets (emptied first), tables, queues.
// What is already gone is not an error; other resource types are left.
func Teardown(ctx context.Context, res *localdeploy.Result, c localdeploy.Clients) error {
	var errs []error
	for i := len(res.Created) - 1; i >= 0; i-- {
		cr := res.Created[i]
		var err error
		switch cr.Type {
		case "AWS::SQS::Queue":
			err = deleteQueue(ctx, c.SQS, cr.Ref)
		case "AWS::DynamoDB::Table":
			err = deleteTable(ctx, c.DynamoDB, cr.Ref)
		case "AWS::S3::Bucket":
			err = emptyAndDeleteBucket(ctx, c.S3, cr.Ref)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("testenv: teardown %s (%s): %w", cr.LogicalID, cr.Ref, err))
		}
	}
	return errors.Join(errs...)
}

func deleteQueue(ctx context.Context, client any, url string) error {
	api, ok := client.(queueDeleter)
	if !ok {
		return fmt.Errorf("the SQS client %T deletes no queues", client)
	}
	_, err := api.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	if gone := (*sqstypes.QueueDoesNotExist)(nil); errors.As(err, &gone) {
		return nil
	}
	return err
}

func deleteTable(ctx context.Context, client any, name string) error {
	api, ok := client.(tableDeleter)
	if !ok {
		return fmt.Errorf("the DynamoDB client %T deletes no tables", client)
	}
	_, err := api.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	if gone := (*ddbtypes.ResourceNotFoundException)(nil); errors.As(err, &gone) {
		return nil
	}
	return err
}

// emptyAndDeleteBucket deletes every version and delete marker (a
// versioned bucket keeps what a plain delete removes), then the bucket.
func emptyAndDeleteBucket(ctx context.Context, client any, bucket string) error {
	api, ok := client.(bucketDeleter)
	if !ok {
		return fmt.Errorf("the S3 client %T deletes no buckets", client)
	}
	pages := s3.NewListObjectVersionsPaginator(api, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		// ListObjectVersions models no NoSuchBucket error: its code tells.
		var gone smithy.APIError
		if errors.As(err, &gone) && gone.ErrorCode() == "NoSuchBucket" {
			return nil
		}
		if err != nil {
			return err
		}
		var objs []s3types.ObjectIdentifier
		for _, v := range page.Versions {
			objs = append(objs, s3types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range page.DeleteMarkers {
			objs = append(objs, s3types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		for _, o := range objs {
			if _, err := api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key, VersionId: o.VersionId}); err != nil {
				return err
			}
		}
	}
	_, err := api.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	return err
}
