// Command testbootstrap is the Lambda function the localesm smoke test runs
// under the runtime interface emulator. It handles SQS batches and decides
// each message's fate from its body, so a test controls the outcome from
// the messages it sends:
//
//	"fail..."  the message is reported in batchItemFailures
//	"error"    the invocation returns an error (the whole batch fails)
//	"sleep"    the handler outlives its deadline (a timeout)
//	"size:N"   the response is a JSON string of exactly N bytes, in place
//	           of the partial batch response (to test the response limit)
//	anything   else succeeds
//
// When TESTBOOTSTRAP_LOG names a file, every record received is appended to
// it as one JSON line, so the test can see what the function was given.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type logLine struct {
	RequestID string            `json:"aws_request_id"`
	Record    events.SQSMessage `json:"record"`
}

// handle returns an events.SQSEventResponse, or for "size:N" an io.Reader,
// which the runtime sends as it is.
func handle(ctx context.Context, ev events.SQSEvent) (any, error) {
	var resp events.SQSEventResponse
	lc, _ := lambdacontext.FromContext(ctx)
	if err := record(lc, ev); err != nil {
		return resp, err
	}
	for _, m := range ev.Records {
		switch {
		case strings.HasPrefix(m.Body, "size:"):
			n, err := strconv.Atoi(strings.TrimPrefix(m.Body, "size:"))
			if err != nil || n < 2 {
				return resp, errors.New("testbootstrap: size:N needs N >= 2")
			}
			b := bytes.Repeat([]byte("x"), n)
			b[0], b[n-1] = '"', '"'
			return bytes.NewReader(b), nil
		case m.Body == "error":
			return resp, errors.New("testbootstrap: asked to fail the batch")
		case m.Body == "sleep":
			deadline, _ := ctx.Deadline()
			time.Sleep(time.Until(deadline) + time.Second)
		case strings.HasPrefix(m.Body, "fail"):
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return resp, nil
}

func record(lc *lambdacontext.LambdaContext, ev events.SQSEvent) error {
	path := os.Getenv("TESTBOOTSTRAP_LOG")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	var id string
	if lc != nil {
		id = lc.AwsRequestID
	}
	for _, m := range ev.Records {
		if err := enc.Encode(logLine{RequestID: id, Record: m}); err != nil {
			_ = f.Close()
			return err
		}
	}
	return f.Close()
}

func main() {
	lambda.Start(handle)
}
