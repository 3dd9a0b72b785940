// Package s3memtest is the conformance suite of an S3 (Run): every
// operation and answer of the part of the S3 API that s3mem.S3 implements
// (PutObject, GetObject, HeadObject, ListObjectsV2, DeleteObject), checked
// against what AWS S3 does, plus the requests this repository's callers
// other than candidate.Store make, as they make them. pkg/s3mem runs it on
// s3mem.S3 and on the local stack's S3 emulator (whose buckets
// awstest.Bucket makes).
//
// Invariants:
//   - A server that passes Run answers as AWS does, except where a
//     Deviation is declared: then the suite checks the server's own
//     behaviour, as the Deviation describes it, so a server that changes
//     fails either way. s3mem declares none, so a test on it sees what it
//     would see on AWS.
//   - What the suite says of AWS is checked in AWS's documentation, or,
//     where that is silent, in what S3-compatible servers' test suites
//     observe of S3 (each test says which); where a client setting
//     decides (the Content-Type of a put without one, GetObject's
//     checksum), the suite expects the SDK's defaults, which this
//     repository's clients use.
//   - Each test runs in parallel on a bucket of its own and leaves other
//     buckets alone.
package s3memtest
