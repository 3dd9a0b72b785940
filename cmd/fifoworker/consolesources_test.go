package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
)

var (
	_ console.Depth         = (*queueDepth)(nil)
	_ console.OldestCommand = (*commandAge)(nil)
)

// fakeAttributes answers GetQueueAttributes with attrs, recording the
// request.
type fakeAttributes struct {
	attrs map[string]string
	err   error
	asked []*sqs.GetQueueAttributesInput
}

func (f *fakeAttributes) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.asked = append(f.asked, in)
	if f.err != nil {
		return nil, f.err
	}
	return &sqs.GetQueueAttributesOutput{Attributes: f.attrs}, nil
}

// A dead-letter queue's depth is every message it holds (visible, in
// flight, delayed), read from its attributes: never a receive.
func TestQueueDepthCountsEveryMessageTheQueueHolds(t *testing.T) {
	t.Parallel()
	const url = "http://sqs.local/000000000000/stack-commands-dlq.fifo"
	api := &fakeAttributes{attrs: map[string]string{
		"ApproximateNumberOfMessages": "7", "ApproximateNumberOfMessagesNotVisible": "2", "ApproximateNumberOfMessagesDelayed": "1",
	}}
	d := &queueDepth{api: api, url: url}
	n, err := d.Depth(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(10), n)
	require.Len(t, api.asked, 1)
	require.Equal(t, url, aws.ToString(api.asked[0].QueueUrl))
	require.ElementsMatch(t, []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
	}, api.asked[0].AttributeNames)

	api.attrs["ApproximateNumberOfMessagesDelayed"] = "many"
	_, err = d.Depth(t.Context())
	require.ErrorContains(t, err, `queue `+url+`: ApproximateNumberOfMessagesDelayed "many" is not a count`)
	delete(api.attrs, "ApproximateNumberOfMessagesDelayed")
	_, err = d.Depth(t.Context())
	require.ErrorContains(t, err, `ApproximateNumberOfMessagesDelayed "" is not a count`)
	api.err = errors.New("injected: throttled")
	_, err = d.Depth(t.Context())
	require.ErrorContains(t, err, "queue "+url+": injected: throttled")
}

// fakeMetrics answers GetMetricData with out, recording the request.
type fakeMetrics struct {
	out   *cloudwatch.GetMetricDataOutput
	err   error
	asked []*cloudwatch.GetMetricDataInput
}

func (f *fakeMetrics) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	f.asked = append(f.asked, in)
	return f.out, f.err
}

func metricResult(status cwtypes.StatusCode, values ...float64) *cloudwatch.GetMetricDataOutput {
	return &cloudwatch.GetMetricDataOutput{MetricDataResults: []cwtypes.MetricDataResult{
		{Id: aws.String(oldestQueryID), StatusCode: status, Values: values},
	}}
}

// The age of the oldest command is SQS's ApproximateAgeOfOldestMessage
// of the commands queue, its maximum of the latest minute in the last
// five that has one.
func TestCommandAgeAsksCloudWatchForTheCommandsQueuesOldestMessage(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 13, 30, 25, 0, time.UTC)
	api := &fakeMetrics{out: metricResult(cwtypes.StatusCodeComplete, 42, 300)}
	a := &commandAge{api: api, queue: "stack-commands.fifo", now: func() time.Time { return now }}
	age, err := a.OldestCommandAge(t.Context())
	require.NoError(t, err)
	require.Equal(t, 42*time.Second, age, "the latest minute's, the first of a descending scan")

	require.Len(t, api.asked, 1)
	in := api.asked[0]
	require.Equal(t, now.Add(-5*time.Minute), aws.ToTime(in.StartTime))
	require.Equal(t, now, aws.ToTime(in.EndTime))
	require.Equal(t, cwtypes.ScanByTimestampDescending, in.ScanBy)
	require.Len(t, in.MetricDataQueries, 1)
	q := in.MetricDataQueries[0]
	require.Equal(t, oldestQueryID, aws.ToString(q.Id))
	require.Equal(t, "AWS/SQS", aws.ToString(q.MetricStat.Metric.Namespace))
	require.Equal(t, "ApproximateAgeOfOldestMessage", aws.ToString(q.MetricStat.Metric.MetricName))
	require.Equal(t, []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("stack-commands.fifo")}}, q.MetricStat.Metric.Dimensions)
	require.Equal(t, "Maximum", aws.ToString(q.MetricStat.Stat))
	require.Equal(t, int32(60), aws.ToInt32(q.MetricStat.Period))

	// No datapoint: SQS publishes the metric only while the queue holds a
	// message, so the queue held none, or its name is not a queue's:
	// said, not shown as 0s.
	api.out = metricResult(cwtypes.StatusCodeComplete)
	_, err = a.OldestCommandAge(t.Context())
	require.ErrorIs(t, err, console.ErrNoDatapoint)
	require.EqualError(t, err, "no datapoint in the last 5 minutes: the queue is empty or its name is wrong")

	api.out = metricResult(cwtypes.StatusCodeForbidden)
	_, err = a.OldestCommandAge(t.Context())
	require.ErrorContains(t, err, "ApproximateAgeOfOldestMessage of stack-commands.fifo: CloudWatch answered Forbidden")
	api.out = &cloudwatch.GetMetricDataOutput{}
	_, err = a.OldestCommandAge(t.Context())
	require.ErrorContains(t, err, "ApproximateAgeOfOldestMessage of stack-commands.fifo: CloudWatch returned no result")
	api.err = errors.New("injected: denied")
	_, err = a.OldestCommandAge(t.Context())
	require.ErrorContains(t, err, "ApproximateAgeOfOldestMessage of stack-commands.fifo: injected: denied")
}
