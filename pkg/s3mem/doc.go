// Package s3mem is an in-memory S3 for tests: S3 stands in for the
// *s3.Client that a candidate.Store, the sweeper's cursor and the
// quarantine's body store call, with the S3 semantics they rely on (listed
// on S3), and FaultyS3 wraps one with what tests need that S3 does not
// offer: counting requests, failing chosen ones, holding a put. The unit
// tests of pkg/candidate, the worker, the sweeper, the tasks and the
// wiring, and the simulation (internal/sim), run on it.
//
// It is faithful because one conformance suite, s3memtest.Run, runs on it
// (TestConformance, and TestFaultyConformance for a FaultyS3 that fails
// nothing) and on the local stack's S3 emulator
// (TestIntegrationConformance): every operation it implements, every
// answer it gives, and the requests its callers make as they make them
// (the sweeper cursor's one-key listing, the quarantine's bodies). The
// suite checks what AWS S3 does. Where the emulator does otherwise, its
// run declares the deviation (s3memtest.Deviation says each one), the
// suite checks the emulator's own behaviour there instead, and s3mem,
// which declares none, follows AWS. Its own tests cover what no S3 would
// show: objects corrupted at rest (PutRaw), and FaultyS3's faults.
//
// It imports nothing of this module, so a library's tests may use it.
package s3mem
