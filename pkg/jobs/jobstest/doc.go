// Package jobstest is the conformance suite every jobs.Store must pass
// (Run), and the linearizability check of concurrent histories against a
// model of the job state machine (RecordHistory, CheckHistory, Model).
//
// Invariants:
//   - A store that passes Run behaves like every other that does: the
//     in-memory store may stand in for DynamoDB in tests because both pass.
//   - Each test of the suite uses its own clock, job ids and tenant, so
//     stores handed to different tests may share one table.
//   - A history passes CheckHistory only if every job's operations can be
//     ordered, within their call and return times, into a run of Model, at
//     most one accept per job succeeded, each generation went to one attempt,
//     generations grew in real time, and only a generation's holder wrote
//     with it.
package jobstest
