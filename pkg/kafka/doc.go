// Package kafka is the partial batch response of Lambda's Kafka event
// source mappings (Amazon MSK and self-managed Apache Kafka), which
// aws-lambda-go has no type for, and the contiguous-prefix commit that
// keeps a partition's order. It is the first step of the Kafka processor:
// two pure functions, no I/O.
//
// # What AWS documents, and what it does not
//
// Checked (2026-12) in "Configuring error handling controls for Kafka
// event sources",
// https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html:
// in provisioned mode, a Kafka mapping offers MaximumRetryAttempts,
// MaximumRecordAgeInSeconds, BisectBatchOnFunctionError and
// ReportBatchItemFailures, which lets the function "return information
// about which records in a batch failed processing, so Lambda can retry
// only the failed records"; infinite retries with an on-failure
// destination are capped at 10
// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html).
//
// The itemIdentifier format is taken from Powertools for AWS Lambda
// (Python), whose Kafka batch support (pull request 7941, 2026-01) returns
//
//	{"batchItemFailures": [{"itemIdentifier": {"partition": "mytopic-0", "offset": 1}}]}
//
// an object, not a string as for SQS and Kinesis: "partition" holds the
// KafkaEvent's records key (topic, hyphen, partition number), not the bare
// partition number, and "offset" is a JSON number (Powertools' batch
// types.py, KafkaItemIdentifier: partition str, offset int). The open aws-lambda-rust-runtime pull request 1164 uses the same
// shape. NOT CONFIRMED: the response-syntax section of AWS's page itself
// could not be read here, only its summary above.
//
// Also NOT CONFIRMED: what Lambda commits and redelivers for Kafka. For
// Kinesis and DynamoDB Streams AWS documents that the lowest reported
// sequence number becomes the checkpoint and every record from it is
// retried
// (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html);
// for Kafka the page says only "retry only the failed records", which
// read literally would commit past a record that was not reported.
//
// # Why Response reports every record not completed
//
// Under either reading it loses nothing: if Lambda retries only the
// reported records, every incomplete one is among them; if it restarts
// each partition from the lowest reported offset, that lowest offset is
// reported. Reporting only the lowest would be safe under the second
// reading and lose records under the first. A completed record redelivered
// (the later completions of a partition, under the second reading) costs a
// fenced store's refusal, not a second effect.
//
// # The commit
//
// CommitOffsets is what a faithful local mapping commits: each partition's
// contiguous completed prefix, walked over the records the batch holds, so
// a missing offset (compaction, a transaction marker) never stalls it and
// a completion after a hole never moves it past the hole.
package kafka
