// Package startup is what every function's bootstrap runs before its
// handler: its settings read from the environment, all at once, so that a
// misconfigured function names every problem in one cold-start error
// (Env); the AWS configuration Lambda gives it (Env.AWSConfig); the
// transport its template deploys (CheckTransport); and Main, which builds
// the handler with a Builder and starts the Lambda runtime, or fails the
// init.
//
// It is a package of its own, apart from the builders
// (internal/lambdawire, internal/lambdawire/kafkarelay), because a
// bootstrap links the initialisation of every package it reaches, called
// or not: the builders' package reaches every function's application and
// the DynamoDB, S3 and SQS clients, and the Kafka relay, which calls none
// of them and carries franz-go, would not fit the 10 MB goal with them
// (docs/BENCHMARKS.md). This package reaches no AWS service client.
package startup
