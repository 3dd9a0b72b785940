package outbox_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// lambdaTrace returns ctx as aws-lambda-go hands it to a handler whose
// invocation carries the trace header h: v1.55.1's invoke loop
// (lambda/invoke_loop.go) stores the Lambda-Runtime-Trace-Id header under
// the string key "x-amzn-trace-id", for every invocation.
func lambdaTrace(ctx context.Context, h string) context.Context {
	return context.WithValue(ctx, "x-amzn-trace-id", h) //nolint:staticcheck // SA1029: aws-lambda-go's own key, a plain string
}

// wellFormedTrace is X-Ray's trace header as SQS takes it for the
// AWSTraceHeader system attribute: a root trace id (version 1, 8 hex digits
// of epoch seconds, 24 of random), and optionally the parent segment id (16
// hex digits), the sampling decision and the Lineage field Lambda adds for
// its recursive loop detection.
var wellFormedTrace = regexp.MustCompile(`^Root=1-[0-9a-f]{8}-[0-9a-f]{24}(;Parent=[0-9a-f]{16})?(;Sampled=[01?])?(;Lineage=[0-9a-zA-Z:]{1,64})?$`)

// traceHeaders publishes one job's command and two events under ctx and
// returns each sent entry's AWSTraceHeader ("" for none), checking that
// every message went out.
func traceHeaders(t *testing.T, ctx context.Context) []string {
	t.Helper()
	f := &fakeSQS{}
	resp, err := newRelay(t, f).Handle(ctx, events.DynamoDBEvent{Records: history("job-42", jobs.EventStarted, jobs.EventCompleted)})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "a trace header never costs a message")
	var got []string
	for _, call := range f.calls {
		for _, e := range call.Entries {
			a, ok := e.MessageSystemAttributes[string(types.MessageSystemAttributeNameForSendsAWSTraceHeader)]
			if !ok {
				require.Empty(t, e.MessageSystemAttributes, "no system attribute but the trace header")
				got = append(got, "")
				continue
			}
			require.Len(t, e.MessageSystemAttributes, 1)
			require.Equal(t, "String", aws.ToString(a.DataType), "SQS takes the trace header as a String")
			require.NotEmpty(t, aws.ToString(a.StringValue), "SQS refuses an empty AWSTraceHeader: no header is no attribute")
			got = append(got, aws.ToString(a.StringValue))
		}
	}
	require.Len(t, got, 3, "the command and both events")
	return got
}

// A DynamoDB stream carries no trace context, so the relay's own
// invocation is where the commands' and events' traces begin: every
// message it sends carries its invocation's trace header, and the worker's
// and the projector's traces link to it.
func TestRelaySendsItsInvocationsTraceHeaderWithEveryMessage(t *testing.T) {
	t.Parallel()
	for _, h := range []string{
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=?",
		"Root=1-5759e988-bd862e3fe1be46a994272793",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1;Lineage=a87bd80c:0",
	} {
		got := traceHeaders(t, lambdaTrace(t.Context(), h))
		for _, g := range got {
			require.Equal(t, h, g, "every message carries the invocation's header")
			require.Regexp(t, wellFormedTrace, g)
		}
	}
}

// Outside Lambda, or in an invocation without a trace, there is nothing
// to send: no system attribute at all.
func TestRelaySendsNoTraceHeaderWhenItsInvocationHasNone(t *testing.T) {
	t.Parallel()
	for name, ctx := range map[string]context.Context{
		"no value":    t.Context(),
		"empty value": lambdaTrace(t.Context(), ""),
	} {
		require.Equal(t, []string{"", "", ""}, traceHeaders(t, ctx), name)
	}
}

// SQS refuses a message whose AWSTraceHeader is not a well-formed X-Ray
// header, and the relay retries a refused message until the stream
// mapping gives up on it: a header the relay cannot vouch for is dropped,
// never sent. What is well-formed is kept: a field of the wrong shape goes
// and the rest stays, and an unknown field goes.
func TestRelayDropsATraceHeaderSQSWouldRefuse(t *testing.T) {
	t.Parallel()
	const root = "Root=1-5759e988-bd862e3fe1be46a994272793"
	for h, want := range map[string]string{
		"garbage":                           "",
		"Root=":                             "",
		"Parent=53995c3f42cd8ad8;Sampled=1": "", // no root
		"Root=1-5759e98-bd862e3fe1be46a994272793":                          "", // 7 hex digits of time
		"Root=1-5759e9888-bd862e3fe1be46a994272793":                        "",
		"Root=1-5759e988-bd862e3fe1be46a99427279":                          "", // 23 of random
		"Root=1-5759e988-bd862e3fe1be46a9942727933":                        "",
		"Root=2-5759e988-bd862e3fe1be46a994272793":                         "", // an unknown version
		"Root=1-5759E988-bd862e3fe1be46a994272793":                         "", // X-Ray writes lower case
		"Root=1-5759e988-bd862e3fe1be46a994272793\n":                       "",
		root + ";Root=1-5759e988-bd862e3fe1be46a994272794":                 "", // two roots: which one?
		root + ";Parent=53995c3f42cd8ad":                                   root,
		root + ";Parent=53995c3f42cd8ad8a":                                 root,
		root + ";Parent=53995c3f42cd8ad8;Sampled=yes":                      root + ";Parent=53995c3f42cd8ad8",
		root + ";Sampled=1;Lineage=a87bd80c:0;Self=1-5759e988-bd862e3f":    root + ";Sampled=1;Lineage=a87bd80c:0",
		root + ";Lineage=a87bd80c 0":                                       root,
		root + ";Parent=53995c3f42cd8ad8;Sampled=1;Lineage=" + lineage(64): root + ";Parent=53995c3f42cd8ad8;Sampled=1;Lineage=" + lineage(64),
		root + ";Parent=53995c3f42cd8ad8;Sampled=1;Lineage=" + lineage(65): root + ";Parent=53995c3f42cd8ad8;Sampled=1",
		"Sampled=1;Parent=53995c3f42cd8ad8;" + root:                        root + ";Parent=53995c3f42cd8ad8;Sampled=1", // X-Ray's order
		" " + root:  "",
		root + ";;": root,
	} {
		got := traceHeaders(t, lambdaTrace(t.Context(), h))
		for _, g := range got {
			require.Equal(t, want, g, "from %q", h)
			if g != "" {
				require.Regexp(t, wellFormedTrace, g)
			}
		}
	}
}

func lineage(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = "0123456789abcdef:"[i%17]
	}
	return string(b)
}
