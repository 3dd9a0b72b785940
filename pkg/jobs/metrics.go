package jobs

// MetricsNamespace is the CloudWatch namespace of the job metrics, which
// the functions write as embedded metric format (EMF) records with the
// one dimension FunctionName: intake counts the jobs it creates, the
// worker writes the latency of each job its accept completes, the
// projector counts the jobs that end and the totals' write conflicts, so
// that an operator's dashboard (template.yaml's OperatorDashboard) reads
// them by function. No job or tenant id is a dimension: each would be a
// metric of its own.
const MetricsNamespace = "fifoworker/jobs"

// MetricsDimension is the name of the job metrics' one dimension; its
// value is the writing function's name.
const MetricsDimension = "FunctionName"

// The job metrics.
const (
	// MetricCreated counts the jobs intake created: a new job, never an
	// idempotent replay of one (CreateResult.Existing).
	MetricCreated = "JobsCreated"
	// MetricCompleted counts the jobs that reached StatusCompleted, once
	// each: the projector counts the event its job's cursor applies (or
	// the recovery that moves the cursor to the final version), and the
	// cursor applies a version once whatever the redeliveries.
	MetricCompleted = "JobsCompleted"
	// MetricFailed counts the jobs that reached StatusFailed, as
	// MetricCompleted counts the completed.
	MetricFailed = "JobsFailed"
	// MetricLatency is a completed job's time from its creation to its
	// completion, in milliseconds, written by the worker whose accept
	// completed it (the item it returns holds both times; no event carries
	// the creation's): one value per job, so CloudWatch gives its
	// percentiles.
	MetricLatency = "JobLatency"
	// MetricTotalsConflicts counts the rounds a totals write lost to a
	// concurrent one (DynamoDB's TransactionConflict) and was retried.
	MetricTotalsConflicts = "TotalsConflicts"
)
