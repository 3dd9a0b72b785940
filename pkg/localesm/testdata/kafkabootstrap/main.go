// Command kafkabootstrap is the Lambda function the Kafka mapping's
// integration test runs under the runtime interface emulator. It handles
// Kafka batches and answers a partial batch response
// (pkg/kafka.EventResponse), deciding each record's fate from its value:
//
//	"fail-once"  reported failed the first time this process sees the
//	             record (topic-partition and offset), done after that
//	"error"      the invocation returns an error (the whole batch fails)
//	anything     else is done
//
// The emulator keeps one process between invocations, so "first time" is
// per emulator. When TESTBOOTSTRAP_LOG names a file, every invocation is
// appended to it as one JSON line: the request id and the event as the
// function decoded it, so the test sees what Lambda's Go runtime gave it.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"sort"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

type logLine struct {
	RequestID string            `json:"aws_request_id"`
	Event     events.KafkaEvent `json:"event"`
}

// seen is every record this process has been given.
var seen = map[kafka.ItemIdentifier]bool{}

func handle(ctx context.Context, ev events.KafkaEvent) (kafka.EventResponse, error) {
	resp := kafka.EventResponse{BatchItemFailures: []kafka.BatchItemFailure{}}
	lc, _ := lambdacontext.FromContext(ctx)
	if err := record(lc, ev); err != nil {
		return resp, err
	}
	keys := make([]string, 0, len(ev.Records))
	for tp := range ev.Records {
		keys = append(keys, tp)
	}
	sort.Strings(keys)
	for _, tp := range keys {
		for _, r := range ev.Records[tp] {
			value, err := base64.StdEncoding.DecodeString(r.Value)
			if err != nil {
				return resp, err
			}
			id := kafka.ItemIdentifier{TopicPartition: kafka.TopicPartition(r.Topic, r.Partition), Offset: r.Offset}
			first := !seen[id]
			seen[id] = true
			switch {
			case string(value) == "error":
				return resp, errors.New("kafkabootstrap: asked to fail the batch")
			case string(value) == "fail-once" && first:
				resp.BatchItemFailures = append(resp.BatchItemFailures, kafka.BatchItemFailure{ItemIdentifier: id})
			}
		}
	}
	return resp, nil
}

func record(lc *lambdacontext.LambdaContext, ev events.KafkaEvent) error {
	path := os.Getenv("TESTBOOTSTRAP_LOG")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	var id string
	if lc != nil {
		id = lc.AwsRequestID
	}
	if err := json.NewEncoder(f).Encode(logLine{RequestID: id, Event: ev}); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func main() {
	lambda.Start(handle)
}
