// Package capacity is the capacity model of docs/CAPACITY.md as code: the
// jobs per second each limit allows, from the requests one job costs (counted
// by the integration tests and committed in requests.json, which those tests
// compare with what they count, so the model cannot drift from the code),
// the template's settings (read from template.yaml) and AWS's published
// quotas (a table in this package, each with its source).
//
// It models the design as the template sets it: each tenant's totals over
// TotalsShards partition-key values (one without the parameter), the
// projector's and the worker's concurrency, the live index's shards. Its
// batch times are constants here: the worker's and the projector's as
// measured at 512 MB (make bench-memory), intake's and the relay's
// assumed. docs/CAPACITY.md's figures
// are generated from it (document.go: blocks between marker comments,
// rewritten by DocumentGeneratedBy; a unit test fails while the document
// differs), and GoalShortfalls states issue 19's goal on paper.
//
// It also prices a million jobs from the same counts at list prices
// (prices.go: dated, us-east-1 only, each with its source and whether AWS's
// own page confirmed the figure), Lambda's time from those batch times and
// each function's MemorySize in the template: a cost on
// paper, each job alone, never a measurement.
package capacity
