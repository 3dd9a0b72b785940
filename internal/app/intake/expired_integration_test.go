//go:build integration

package intake_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// TestIntegrationRetryAfterTheJobExpired: a POST retried after its job's
// item was deleted under the table's TTL, while the intent's marker is
// still there (DynamoDB deletes expired items days later, in any order),
// creates a new job under a new id (jobs.SuccessorJobID): 202, then 200
// for the next retry. (It used to answer 500 "may be retried", for ever.)
// While the job's item is there, expired or not, the retry answers 200
// with it, as GET shows it.
func TestIntegrationRetryAfterTheJobExpired(t *testing.T) {
	t.Parallel()
	b := setupIntegration(t)
	const body = `{"spec":{"page_size":"50"}}`
	resp := b.do(t, post("t-1", "export-intent-7", body))
	require.Equal(t, 202, resp.StatusCode, resp.Body)
	first := createdOf(t, resp)
	cancelled := viewOf(t, b.do(t, del("t-1", first.JobID)))
	require.Equal(t, "cancelled", cancelled.Status)

	// Ended (and, for all the store can tell, expired): the same job.
	resp = b.do(t, post("t-1", "export-intent-7", body))
	require.Equal(t, 200, resp.StatusCode, resp.Body)
	require.Equal(t, intake.CreatedView{JobID: first.JobID, Status: "cancelled", Location: first.Location}, createdOf(t, resp))

	// DynamoDB's TTL deletes the job's item first.
	_, err := b.ddb.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{
		TableName: aws.String(b.table),
		Key:       map[string]ddbtypes.AttributeValue{"job_id": &ddbtypes.AttributeValueMemberS{Value: first.JobID}},
	})
	require.NoError(t, err)
	resp = b.do(t, get("t-1", first.JobID))
	require.Equal(t, 404, resp.StatusCode)
	require.Equal(t, intake.CodeJobNotFound, errorOf(t, resp).Code)
	marker, err := b.ddb.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(b.table),
		Key:       map[string]ddbtypes.AttributeValue{"job_id": &ddbtypes.AttributeValueMemberS{Value: jobs.IntentKey("t-1", "export-intent-7")}},
	})
	require.NoError(t, err)
	require.NotEmpty(t, marker.Item, "the intent's marker is still there")

	// The retry: a new job, whatever the spec.
	resp = b.do(t, post("t-1", "export-intent-7", `{"spec":{"page_size":"10"}}`))
	require.Equal(t, 202, resp.StatusCode, resp.Body)
	again := createdOf(t, resp)
	successor := jobs.SuccessorJobID("t-1", "export-intent-7", first.JobID)
	require.NotEqual(t, first.JobID, successor)
	require.Equal(t, intake.CreatedView{JobID: successor, Status: "pending", Location: "/jobs/" + successor}, again,
		"a new id, the successor of the expired job's: the projection never meets the old job's view and cursor")
	v := viewOf(t, b.do(t, get("t-1", again.JobID)))
	require.Equal(t, "pending", v.Status)
	require.Zero(t, v.Version)
	resp = b.do(t, post("t-1", "export-intent-7", `{"spec":{"page_size":"10"}}`))
	require.Equal(t, 200, resp.StatusCode, resp.Body)
	resp = b.do(t, post("t-1", "export-intent-7", body))
	require.Equal(t, 409, resp.StatusCode, "the intent now stands for the new job's spec")
	require.Equal(t, intake.CodeIntentConflict, errorOf(t, resp).Code)
}
