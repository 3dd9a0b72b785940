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
package capacity
