// Package jobitem is the job item of pkg/jobs: its model (Job, its Status,
// the Message its last transition emitted), its attributes in the Jobs
// table, and its one decoder, FromStreamImage, which reads an item in the
// form a stream record shows it. pkg/jobs gives all of it under its own
// names (jobs.Job is jobitem.Job) and reads the items its store gets from
// DynamoDB with the same decoder (Decode, which jobs.FromItem runs on the
// SDK's form of an item through internal/base/ddbitem), so an item and an
// image of it decode alike, with the same errors, which say "jobs:" as
// pkg/jobs's do. Only no item and an intent marker are not jobs
// (ErrNotJob); a job item without its key or status is an error.
//
// The PostgreSQL store's rows and its outbox's images (the job_outbox
// table) are JSON objects of the same attributes, which FromPostgresImage
// decodes with the same decoder, and EncodePostgresImage writes.
//
// It is a package of its own so that a reader of the table's stream that
// needs nothing else of pkg/jobs (the relay, internal/app/outbox) links no
// DynamoDB client nor the SDK's DynamoDB types: their packages'
// initialisation is 0.59 MB of an arm64 bootstrap, called or not, which
// the Kafka relay, carrying franz-go, cannot spare under the 10 MB goal
// (docs/BENCHMARKS.md). It imports aws-lambda-go's events and
// internal/base's rules, nothing of the SDK.
package jobitem
