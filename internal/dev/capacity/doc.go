// Package capacity is the capacity model of docs/CAPACITY.md as code: the
// jobs per second each limit allows, from the requests one job costs (counted
// by the integration tests and committed in requests.json, which those tests
// compare with what they count, so the model cannot drift from the code),
// the template's settings (read from template.yaml) and AWS's published
// quotas (a table in this package, each with its source).
//
// It models today's design: one totals item per tenant, the projector's
// concurrency and the live index's shards where the template or the code
// sets them. The AWS latencies it assumes are constants here, as the
// document states them.
//
// It also prices a million jobs from the same counts at list prices
// (prices.go: dated, us-east-1 only, each with its source and whether AWS's
// own page confirmed the figure), Lambda's time from those assumed
// latencies and each function's MemorySize in the template: a cost on
// paper, each job alone, never a measurement.
package capacity
