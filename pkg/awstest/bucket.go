package awstest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Bucket creates a bucket named Name(t, prefix) through client, in the
// client's region, deletes it with every object it holds when the test
// ends, and returns its name.
func Bucket(t testing.TB, client *s3.Client, prefix string) string {
	t.Helper()
	name := Name(t, prefix)
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	// us-east-1 takes no location constraint; every other region needs its
	// own.
	if region := client.Options().Region; region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(region)}
	}
	if _, err := client.CreateBucket(context.Background(), in); err != nil {
		t.Fatalf("awstest: create bucket %s: %v", name, err)
	}
	t.Cleanup(func() { deleteBucket(t, client, name) })
	return name
}

// deleteBucket empties the bucket and deletes it, reporting what fails.
func deleteBucket(t testing.TB, client *s3.Client, name string) {
	ctx := context.Background() // t.Context() has ended by now
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Errorf("awstest: cleanup: list %s: %v", name, err)
			return
		}
		for _, obj := range page.Contents {
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: obj.Key}); err != nil {
				t.Errorf("awstest: cleanup: delete %s/%s: %v", name, aws.ToString(obj.Key), err)
			}
		}
	}
	if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Errorf("awstest: cleanup: delete bucket %s: %v", name, err)
	}
}
