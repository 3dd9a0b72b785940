package jobs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// fakeDynamo is a jobs.DynamoDBAPI whose answers a test scripts. Calls it
// was not given an answer for fail the test.
type fakeDynamo struct {
	t        *testing.T
	get      func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
	update   func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
	transact func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ jobs.DynamoDBAPI = (*fakeDynamo)(nil)

func (f *fakeDynamo) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if f.get == nil {
		f.t.Errorf("unexpected GetItem")
		return nil, errors.New("unexpected GetItem")
	}
	return f.get(in)
}

func (f *fakeDynamo) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.update == nil {
		f.t.Errorf("unexpected UpdateItem")
		return nil, errors.New("unexpected UpdateItem")
	}
	return f.update(in)
}

func (f *fakeDynamo) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if f.transact == nil {
		f.t.Errorf("unexpected TransactWriteItems")
		return nil, errors.New("unexpected TransactWriteItems")
	}
	return f.transact(in)
}

// TestNewDynamoStoreTakesTheExportedInterface: a caller outside the package
// can hand the store its own implementation of jobs.DynamoDBAPI.
func TestNewDynamoStoreTakesTheExportedInterface(t *testing.T) {
	t.Parallel()
	var asked string
	api := &fakeDynamo{t: t, get: func(in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
		asked = *in.TableName
		require.True(t, *in.ConsistentRead, "Get reads strongly consistent")
		return &dynamodb.GetItemOutput{}, nil
	}}
	store := jobs.NewDynamoStore(api, "jobs")
	_, err := store.Get(t.Context(), "job-42")
	require.ErrorIs(t, err, jobs.ErrNotFound)
	require.Equal(t, "jobs", asked)
}
