// Package candidatetest holds the candidate store's own test helpers:
// Disk, a spool of a fixed size for tests that fill a function's /tmp
// (candidate.Config.Spool). The in-memory S3 that candidate stores run on
// in tests is package s3mem.
package candidatetest
