package capacity

import (
	"fmt"
	"slices"
)

// Owner is who can move a limit.
type Owner string

const (
	// Ours is a limit of this design or its template: a parameter or a
	// code change raises it.
	Ours Owner = "ours"
	// AWSAdjustable is an AWS quota a Service Quotas request (or AWS's
	// own adaptation, or pre-warming) raises.
	AWSAdjustable Owner = "aws-adjustable"
	// AWSFixed is an AWS limit no request raises: only a design that
	// needs less of it goes past it.
	AWSFixed Owner = "aws-fixed"
)

// Quota is one published AWS quota the model uses.
type Quota struct {
	Name   string
	Value  float64 // the default; a regional quota's is in the regions table
	Unit   string
	Owner  Owner
	Raise  string // what raises it
	Source string // the AWS page that states it
}

// The quotas, by the name the model uses. Checked on the pages named,
// 2026-12-02 (docs/CAPACITY.md cites the same).
var (
	// partitionWrites bound one partition-key value's writes: every
	// partition takes at most 1,000 write units a second (the pages
	// below: "each individual partition is limited to 1,000 write units
	// per second"; past it DynamoDB throttles with
	// KeyRangeThroughputExceeded), and the items of one partition-key
	// value share a partition until DynamoDB splits it. DynamoDB's split
	// for heat can split a hot partition by sort key (AWS Database Blog,
	// "Scaling DynamoDB: How partitions, hot keys, and split for heat
	// impact performance", part 3), but not where the sort key only grows
	// (the live index) and not on a schedule a plan can count on, so the
	// model takes one partition-key value as one partition: a bound on the
	// safe side. Read 2026-12-02.
	partitionWrites = Quota{
		Name: "DynamoDB writes per partition-key value (one partition)", Value: 1000, Unit: "write units/s", Owner: AWSFixed,
		Raise: "spread the writes over more partition-key values (split for heat may split a value's items by sort key, " +
			"not a sort key that only grows, and not when a plan needs it)",
		Source: "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html, " +
			"https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-key-range-limit-exceeded-mitigation.html, " +
			"https://aws.amazon.com/blogs/database/part-3-scaling-dynamodb-how-partitions-hot-keys-and-split-for-heat-impact-performance/",
	}
	// itemWrites bound one item's writes: adaptive capacity isolates a
	// frequently written item on a partition of its own, whose limit
	// stays 1,000 write units a second ("throttling will occur if a single
	// partition receives ... more than 1000 write operations";
	// "Isolate frequently accessed items"), and an item is never split.
	// Read 2026-12-02.
	itemWrites = Quota{
		Name: "DynamoDB writes per item", Value: 1000, Unit: "write units/s", Owner: AWSFixed,
		Raise:  "write the item less, or spread its writes over more items: one item cannot be split",
		Source: "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/burst-adaptive-capacity.html#isolate-frequent-access-items",
	}
	newTableWrites = Quota{
		Name: "a new on-demand table's initial throughput", Value: 4000, Unit: "write units/s", Owner: AWSAdjustable,
		Raise:  "pre-warm the table (warm throughput) or ramp up over hours (more than double the previous peak within 30 minutes may throttle); or provisioned capacity",
		Source: "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html",
	}
	tableMaxWrites = Quota{
		Name: "on-demand maximum per table", Value: 40000, Unit: "write units/s", Owner: AWSAdjustable,
		Raise:  "a Service Quotas increase",
		Source: "https://repost.aws/knowledge-center/on-demand-table-throttling-dynamodb",
	}
	s3PrefixPuts = Quota{
		Name: "S3 PUTs per partitioned prefix", Value: 3500, Unit: "requests/s", Owner: AWSFixed,
		Raise:  "wait while S3 partitions candidates/ under the load (503 SlowDown meanwhile, which the SDK retries), or ask AWS support to pre-partition",
		Source: "https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html",
	}
	lambdaConcurrency = Quota{
		Name: "Lambda concurrent executions per account and region", Value: 1000, Unit: "executions", Owner: AWSAdjustable,
		Raise:  "a Service Quotas increase (to tens of thousands)",
		Source: "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html",
	}
	fifoGroups = Quota{
		Name: "SQS FIFO: one batch per message group in flight", Value: 1, Unit: "batches per group", Owner: AWSFixed,
		Raise:  "more groups (each job is its own group: they are the jobs in flight)",
		Source: "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html",
	}
	sqsBatch = Quota{
		Name: "SQS messages per SendMessageBatch", Value: 10, Unit: "messages", Owner: AWSFixed,
		Source: "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html",
	}
	apiGatewayRate = Quota{
		Name: "API Gateway throttle per account and region", Unit: "requests/s", Owner: AWSAdjustable,
		Raise:  "a Service Quotas increase; or create jobs in bulk",
		Source: "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html",
	}
	sqsHighThroughput = Quota{
		Name: "SQS FIFO high throughput per API action per queue", Unit: "transactions/s", Owner: AWSFixed,
		Raise:  "batch (the relay and Lambda's pollers do, up to 10 messages a call); or a queue per tenant",
		Source: "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/high-throughput-fifo.html",
	}
	// mappingConcurrency is the bound of a mapping's MaximumConcurrency.
	mappingConcurrency = Quota{
		Name: "an SQS event source's MaximumConcurrency", Value: 1000, Unit: "invocations", Owner: AWSFixed,
		Source: "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html",
	}
)

// Quotas are the quotas the model uses, for a table of them.
func Quotas() []Quota {
	return []Quota{partitionWrites, itemWrites, newTableWrites, tableMaxWrites, s3PrefixPuts, lambdaConcurrency, fifoGroups, sqsBatch, apiGatewayRate, sqsHighThroughput, mappingConcurrency}
}

// RegionQuotas are a region's regional quotas.
type RegionQuotas struct {
	APIGatewayRate    float64 // requests/s
	SQSHighThroughput float64 // transactions/s per API action per queue
}

// The regional quotas' defaults and the regions that differ. API
// Gateway's: 10,000 requests/s, 2,500 in the regions its page lists (Cape
// Town, Milan, Jakarta, UAE, Hyderabad, Melbourne, Spain, Zurich, Tel
// Aviv, Calgary, Malaysia, Thailand, Mexico Central). SQS FIFO high
// throughput's (per API action per queue): 70,000, 19,000, 9,000, 4,500,
// and 2,400 elsewhere, as its quotas page lists them.
var (
	apiGatewayLow = []string{"af-south-1", "eu-south-1", "ap-southeast-3", "me-central-1", "ap-south-2", "ap-southeast-4",
		"eu-south-2", "eu-central-2", "il-central-1", "ca-west-1", "ap-southeast-5", "ap-southeast-7", "mx-central-1"}
	sqsByRegion = map[string]float64{
		"us-east-1": 70000, "us-west-2": 70000, "eu-west-1": 70000,
		"us-east-2": 19000, "eu-central-1": 19000,
		"ap-south-1": 9000, "ap-southeast-1": 9000, "ap-southeast-2": 9000, "ap-northeast-1": 9000,
		"eu-west-2": 4500, "sa-east-1": 4500,
	}
	// regions are AWS's commercial regions (not GovCloud nor China, whose
	// quotas these pages do not give).
	regions = []string{
		"af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1", "ap-south-2",
		"ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-6", "ap-southeast-7",
		"ca-central-1", "ca-west-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2",
		"eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1", "me-south-1", "mx-central-1", "sa-east-1",
		"us-east-1", "us-east-2", "us-west-1", "us-west-2",
	}
)

const (
	apiGatewayDefault = 10000
	apiGatewayLowRate = 2500
	sqsDefault        = 2400
)

// Regions returns the regions the model knows, sorted.
func Regions() []string { return slices.Clone(regions) }

// Region returns the regional quotas of region; an unknown region is an
// error that lists the known ones.
func Region(region string) (RegionQuotas, error) {
	if !slices.Contains(regions, region) {
		return RegionQuotas{}, fmt.Errorf("%w: region %q: not an AWS commercial region the model knows (%v)", ErrInvalid, region, regions)
	}
	q := RegionQuotas{APIGatewayRate: apiGatewayDefault, SQSHighThroughput: sqsDefault}
	if slices.Contains(apiGatewayLow, region) {
		q.APIGatewayRate = apiGatewayLowRate
	}
	if v, ok := sqsByRegion[region]; ok {
		q.SQSHighThroughput = v
	}
	return q, nil
}
