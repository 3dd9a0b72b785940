package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoworker/fifoworker/internal/app/console"
)

// The console's sources that no library has: a dead-letter queue's depth
// and the age of the oldest command. Neither receives a message: a
// receive would raise the messages' receive counts and lock their groups.

// depthAttributes are what a queue holds, by SQS's GetQueueAttributes:
// the messages available, those in flight (received, not deleted, within
// their visibility timeout) and those delayed (SQS's API reference,
// GetQueueAttributes; each is approximate).
var depthAttributes = []sqstypes.QueueAttributeName{
	sqstypes.QueueAttributeNameApproximateNumberOfMessages,
	sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
}

// queueDepth is the console's Depth of one SQS queue: the sum of
// depthAttributes, one GetQueueAttributes a read.
type queueDepth struct {
	api queueAttributes
	url string
}

func (d *queueDepth) Depth(ctx context.Context) (int64, error) {
	out, err := d.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(d.url), AttributeNames: depthAttributes})
	if err != nil {
		return 0, fmt.Errorf("queue %s: %w", d.url, err)
	}
	var total int64
	for _, name := range depthAttributes {
		v := out.Attributes[string(name)]
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("queue %s: %s %q is not a count", d.url, name, v)
		}
		total += n
	}
	return total, nil
}

// metricData is the part of the CloudWatch client commandAge calls.
type metricData interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

var _ metricData = (*cloudwatch.Client)(nil)

const (
	// oldestQueryID names commandAge's one query in its request.
	oldestQueryID = "oldest"
	// oldestWindow is how far back commandAge looks for a datapoint: SQS
	// publishes its metrics each minute, and CloudWatch shows them a
	// minute or two later.
	oldestWindow = 5 * time.Minute
)

// commandAge is the console's OldestCommand: SQS's
// ApproximateAgeOfOldestMessage of the commands queue from CloudWatch
// (namespace AWS/SQS, dimension QueueName), its Maximum per minute, the
// latest minute of the last oldestWindow that has one. One GetMetricData
// a read (cloudwatch:GetMetricData, which the operator's credentials need).
//
// SQS publishes that metric only while the queue holds a message (SQS's
// developer guide, "Available CloudWatch metrics for Amazon SQS"), and
// CloudWatch answers a metric no queue has with no datapoint either, so
// none in the window is console.ErrNoDatapoint: an empty queue, or a
// wrong name; never shown as age 0.
type commandAge struct {
	api   metricData
	queue string // the commands queue's name, the last part of its URL
	now   func() time.Time
}

func (a *commandAge) OldestCommandAge(ctx context.Context) (time.Duration, error) {
	end := a.now()
	out, err := a.api.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(end.Add(-oldestWindow)),
		EndTime:   aws.Time(end),
		ScanBy:    cwtypes.ScanByTimestampDescending,
		MetricDataQueries: []cwtypes.MetricDataQuery{{
			Id: aws.String(oldestQueryID),
			MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{
					Namespace:  aws.String("AWS/SQS"),
					MetricName: aws.String("ApproximateAgeOfOldestMessage"),
					Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(a.queue)}},
				},
				Period: aws.Int32(60),
				Stat:   aws.String("Maximum"),
			},
		}},
	})
	if err != nil {
		return 0, a.fail(err)
	}
	for _, r := range out.MetricDataResults {
		if aws.ToString(r.Id) != oldestQueryID {
			continue
		}
		switch {
		case r.StatusCode == cwtypes.StatusCodeForbidden || r.StatusCode == cwtypes.StatusCodeInternalError:
			return 0, a.fail(fmt.Errorf("CloudWatch answered %s", r.StatusCode))
		case len(r.Values) == 0:
			return 0, fmt.Errorf("%w in the last %d minutes: the queue is empty or its name is wrong", console.ErrNoDatapoint, int(oldestWindow.Minutes()))
		}
		return time.Duration(r.Values[0] * float64(time.Second)), nil
	}
	return 0, a.fail(fmt.Errorf("CloudWatch returned no result"))
}

func (a *commandAge) fail(err error) error {
	return fmt.Errorf("the ApproximateAgeOfOldestMessage of %s: %w", a.queue, err)
}
