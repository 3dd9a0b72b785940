package jobs_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// TestDynamoLiveAfterReadsTheWholeLastMillisecond: the index gives a
// shard's jobs of one millisecond in no set order, so LiveAfter reads a
// shard past its limit to the end of the last millisecond it gives; the
// page then holds the first jobs by id, and the next page, after the
// position, the rest, none skipped.
func TestDynamoLiveAfterReadsTheWholeLastMillisecond(t *testing.T) {
	t.Parallel()
	// Shard "5": three jobs of one millisecond, the smallest id last, then
	// one later job.
	index := []jobs.LivePosition{{UpdatedAt: 100, ID: "job-c"}, {UpdatedAt: 100, ID: "job-b"}, {UpdatedAt: 100, ID: "job-a"}, {UpdatedAt: 200, ID: "job-d"}}
	api := &fakeDynamo{t: t, query: func(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
		out := &dynamodb.QueryOutput{}
		if in.ExpressionAttributeValues[":s"].(*types.AttributeValueMemberS).Value != "5" {
			return out, nil
		}
		lo := int64(0)
		if v, ok := in.ExpressionAttributeValues[":lo"]; ok {
			lo = must(strconv.ParseInt(v.(*types.AttributeValueMemberN).Value, 10, 64))
		}
		start := 0
		if in.ExclusiveStartKey != nil {
			start = must(strconv.Atoi(in.ExclusiveStartKey["i"].(*types.AttributeValueMemberN).Value))
		}
		for i := start; i < len(index) && len(out.Items) < int(aws.ToInt32(in.Limit)); i++ {
			if p := index[i]; p.UpdatedAt >= lo {
				out.Items = append(out.Items, map[string]types.AttributeValue{
					"job_id": &types.AttributeValueMemberS{Value: p.ID}, "live_shard": &types.AttributeValueMemberS{Value: "5"},
					"updated_at": &types.AttributeValueMemberN{Value: fmt.Sprint(p.UpdatedAt)},
				})
			}
			if i+1 < len(index) {
				out.LastEvaluatedKey = map[string]types.AttributeValue{"i": &types.AttributeValueMemberN{Value: fmt.Sprint(i + 1)}}
			} else {
				out.LastEvaluatedKey = nil
			}
		}
		return out, nil
	}}
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs"})
	require.NoError(t, err)
	before := time.UnixMilli(1000)
	first, err := store.LiveAfter(t.Context(), jobs.LivePosition{}, before, 1)
	require.NoError(t, err)
	require.Equal(t, []jobs.LivePosition{{UpdatedAt: 100, ID: "job-a"}}, first)
	rest, err := store.LiveAfter(t.Context(), first[0], before, 10)
	require.NoError(t, err)
	require.Equal(t, []jobs.LivePosition{{UpdatedAt: 100, ID: "job-b"}, {UpdatedAt: 100, ID: "job-c"}, {UpdatedAt: 200, ID: "job-d"}}, rest)
}

// TestDynamoLiveAfterAsksOneMoreToSeeTheLastMillisecondEnd: LiveAfter asks
// each shard for one entry past what it still needs, so a shard whose next
// entry is of a later millisecond is read in one request; one whose last
// millisecond goes on is read on to its end, as before.
func TestDynamoLiveAfterAsksOneMoreToSeeTheLastMillisecondEnd(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		index []int64 // shard "5"'s entries' milliseconds, job-0, job-1...
		want  []jobs.LivePosition
		asked []int32 // shard "5"'s requests' limits
	}{
		{"the next is later", []int64{100, 200, 300}, []jobs.LivePosition{{UpdatedAt: 100, ID: "job-0"}}, []int32{2}},
		{"the next is a tie", []int64{100, 100, 300}, []jobs.LivePosition{{UpdatedAt: 100, ID: "job-0"}}, []int32{2, 100}},
		{"no next", []int64{100}, []jobs.LivePosition{{UpdatedAt: 100, ID: "job-0"}}, []int32{2}},
	} {
		var asked []int32
		api := &fakeDynamo{t: t, query: func(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
			out := &dynamodb.QueryOutput{}
			if in.ExpressionAttributeValues[":s"].(*types.AttributeValueMemberS).Value != "5" {
				return out, nil
			}
			asked = append(asked, aws.ToInt32(in.Limit))
			start := 0
			if in.ExclusiveStartKey != nil {
				start = must(strconv.Atoi(in.ExclusiveStartKey["i"].(*types.AttributeValueMemberN).Value))
			}
			i := start
			for ; i < len(c.index) && len(out.Items) < int(aws.ToInt32(in.Limit)); i++ {
				out.Items = append(out.Items, map[string]types.AttributeValue{
					"job_id": &types.AttributeValueMemberS{Value: fmt.Sprintf("job-%d", i)}, "live_shard": &types.AttributeValueMemberS{Value: "5"},
					"updated_at": &types.AttributeValueMemberN{Value: fmt.Sprint(c.index[i])},
				})
			}
			if i < len(c.index) {
				out.LastEvaluatedKey = map[string]types.AttributeValue{"i": &types.AttributeValueMemberN{Value: fmt.Sprint(i)}}
			}
			return out, nil
		}}
		store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs"})
		require.NoError(t, err)
		got, err := store.LiveAfter(t.Context(), jobs.LivePosition{}, time.UnixMilli(1000), 1)
		require.NoError(t, err)
		require.Equal(t, c.want, got, c.name)
		require.Equal(t, c.asked, asked, c.name)
	}
}
