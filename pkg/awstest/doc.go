// Package awstest gives integration tests what they need of AWS through the
// SDK for Go v2, on a local stack (or LocalStack, or an account of one's
// own): clients pointed at it, unique names for the queues, tables and
// buckets a test creates, a table of a library's shape, and middleware that
// counts requests and loses answers.
//
// Endpoints come from the SDK's standard variables, which
// config.LoadDefaultConfig reads: AWS_ENDPOINT_URL for every service, or
// one per service (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_DYNAMODB_STREAMS, AWS_ENDPOINT_URL_S3: the service's SDK
// id, upper case, spaces as underscores). This repository's
// `fifoworker local run -- CMD` and `fifoworker local up` set them. A
// client asked for without an endpoint fails the test, with what to set:
// an integration test never skips, and never reaches a real account by
// accident.
//
// It is a library, like the packages whose tests use it: it imports only
// the SDK, the standard library and internal/base/sdkhttp, so that a
// library's tests reach no development tooling.
package awstest
