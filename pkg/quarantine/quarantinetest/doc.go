// Package quarantinetest is the conformance suite every quarantine.Store
// must pass (Run): the Store interface's contract and the rules of
// pkg/quarantine's rules.go, checked operation by operation with the
// complete records each returns and stores.
//
// Invariants:
//   - A store that passes Run behaves like every other that does: the
//     memory store may stand in for DynamoDB in tests because both pass.
//   - After every write the suite checks the count: a hold's Parked equals
//     the number of its group's messages with StatusParked, a released hold
//     counts none, and a draining hold counts at least one.
//   - A refused write (an error of the store's) changes nothing: the suite
//     compares the holds and messages before and after.
//   - Each test uses a queue name of its own, so stores handed to different
//     tests may share one table. Times are whole milliseconds in UTC, the
//     precision a store must keep.
package quarantinetest
