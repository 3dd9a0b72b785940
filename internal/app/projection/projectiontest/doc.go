// Package projectiontest is the conformance suite every projection.Store
// must pass (Run), and the event histories it and the projector's tests
// deliver (Events, Lifecycle).
//
// Invariants:
//   - A store that passes Run behaves like every other that does: the
//     in-memory store may stand in for DynamoDB in tests because both pass.
//   - Each test of the suite uses its own job ids and tenant, so stores
//     handed to different tests may share tables.
//   - The concurrent test is seeded and logs its seed: a failure replays
//     with the same delivery orders (the interleaving of goroutines still
//     varies).
package projectiontest
