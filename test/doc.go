// Package test holds end-to-end tests that cross packages: the running
// example of docs/ARCHITECTURE.md (export-intent-7 → job-42 → worker A stalls →
// worker B takes over → B's accept wins → A's late accept changes nothing →
// A's candidate is an orphan), told step by step against DynamoDB Local and
// the S3 emulator, and the request cost of a job. They carry the build tag
// "integration" and run in make test on the local stack.
package test
