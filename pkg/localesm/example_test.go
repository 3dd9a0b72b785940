package localesm_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// Func turns a Go handler into an Invoker: the event goes through JSON as
// it would over the wire, and the handler gets a deadline the invocation's
// Timeout away and the Lambda context.
func ExampleFunc() {
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		fmt.Println("request", lc.AwsRequestID, "records", len(ev.Records))
		return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: ev.Records[0].MessageId}}}, nil
	}
	res, err := localesm.Func(handler).Invoke(context.Background(), localesm.Invocation{
		RequestID: "req-1",
		Timeout:   3 * time.Second,
		Payload:   []byte(`{"Records":[{"messageId":"cmd-42","body":"{}"}]}`),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, string(res.Payload))
	// Output:
	// request req-1 records 1
	// ok {"batchItemFailures":[{"itemIdentifier":"cmd-42"}]}
}

// The commands queue drives the worker's batch processor in this process,
// as Lambda would drive the worker function. Swap localesm.Func for
// an RIE (localesm.NewRIE(localesm.RIEConfig{Addr: "127.0.0.1:9001"})) to
// run the built bootstrap instead.
func ExampleNewSQSMapping() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx) // AWS_ENDPOINT_URL_SQS points at the local stack
	if err != nil {
		panic(err)
	}
	worker, err := fifo.New(fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		return nil // decode the command, claim the job, run it...
	}, StopOnFirstFailure: true})
	if err != nil {
		panic(err)
	}
	m, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: sqs.NewFromConfig(cfg), Invoker: localesm.Func(worker.Process),
		QueueURL:                os.Getenv("COMMANDS_QUEUE_URL"),
		ReportBatchItemFailures: true,
		FunctionTimeout:         60 * time.Second,
		Logger:                  slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	})
	if err != nil {
		panic(err)
	}
	if err := m.Run(ctx); err != nil {
		panic(err)
	}
}
