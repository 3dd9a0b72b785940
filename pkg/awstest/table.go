package awstest

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// tableActiveWait bounds the wait for a new table to become active: at
// once on DynamoDB Local, seconds to a minute or so on DynamoDB.
const tableActiveWait = 3 * time.Minute

// Table creates the table in describes (a library's shape, such as
// jobs.Table(Name(t, "jobs"))) through client, waits until it is active,
// turns time to live on for ttlAttribute unless it is empty, deletes the
// table when the test ends, and returns its name. DynamoDB takes TTL apart
// from CreateTable (UpdateTimeToLive), and only on an active table.
func Table(t testing.TB, client *dynamodb.Client, in *dynamodb.CreateTableInput, ttlAttribute string) string {
	t.Helper()
	ctx := context.Background() // the table outlives t.Context(): it is deleted in a cleanup
	name := aws.ToString(in.TableName)
	if _, err := client.CreateTable(ctx, in); err != nil {
		t.Fatalf("awstest: create table %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Errorf("awstest: delete table %s: %v", name, err)
		}
	})
	waiter := dynamodb.NewTableExistsWaiter(client)
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableActiveWait); err != nil {
		t.Fatalf("awstest: table %s did not become active: %v", name, err)
	}
	if ttlAttribute == "" {
		return name
	}
	if _, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(ttlAttribute), Enabled: aws.Bool(true)},
	}); err != nil {
		t.Fatalf("awstest: turn time to live on for %s.%s: %v", name, ttlAttribute, err)
	}
	return name
}
