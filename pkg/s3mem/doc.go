// Package s3mem is an in-memory S3 for tests: S3 stands in for the
// *s3.Client that a candidate.Store, the sweeper's cursor and the
// quarantine's body store call, with the S3 semantics they rely on (listed
// on S3), and FaultyS3 wraps one with what tests need that S3 does not
// offer: counting requests, failing chosen ones, holding a put. The unit
// tests of pkg/candidate, the worker, the sweeper, the tasks and the
// wiring, and the simulation (internal/sim), run on it.
//
// It is faithful where it matters because pkg/candidate's store
// conformance tests run on both it (TestMemoryS3Conformance) and the S3
// emulator (TestIntegrationStore): what passes on S3 passes on the
// emulator. Its own tests cover what no store call provokes.
//
// It imports nothing of this module, so a library's tests may use it.
package s3mem
