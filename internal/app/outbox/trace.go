package outbox

import (
	"context"
	"regexp"
	"strings"
)

// lambdaTraceKey is where aws-lambda-go puts an invocation's X-Ray trace
// header (the runtime API's Lambda-Runtime-Trace-Id): v1.55.1's invoke loop
// (lambda/invoke_loop.go) stores it in the handler's context under this
// plain string key, for every invocation. It sets _X_AMZN_TRACE_ID as well,
// but only when the runtime runs one invocation at a time, and a process
// that runs several (the local pipeline) would read another's there.
const lambdaTraceKey = "x-amzn-trace-id"

// The fields of an X-Ray trace header ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
// the relay passes on, each with the shape X-Ray gives it: the trace id
// (version 1, 8 hex digits of epoch seconds, 24 random ones), the parent
// segment id, the sampling decision, and the lineage Lambda adds to detect
// recursive loops. The last is Lambda's own, with no published grammar: it
// is passed on only in the charset and length it has been seen in.
var traceFields = []struct {
	name  string
	shape *regexp.Regexp
}{
	{"Root", regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`)},
	{"Parent", regexp.MustCompile(`^[0-9a-f]{16}$`)},
	{"Sampled", regexp.MustCompile(`^[01?]$`)},
	{"Lineage", regexp.MustCompile(`^[0-9a-zA-Z:]{1,64}$`)},
}

// traceHeader returns the X-Ray trace header the relay sends with each
// message of the invocation ctx belongs to, or "" for none: SQS's
// AWSTraceHeader system attribute, a Kafka record's X-Amzn-Trace-Id header.
// A DynamoDB stream carries no trace context, so without it the traces of
// the worker and the projector would begin at their queues; with it,
// Lambda links them to the relay's invocation (SQS passes the attribute on
// to its consumers).
//
// SQS refuses a message whose AWSTraceHeader is not a well-formed X-Ray
// header (its API reference for SendMessage: "a correctly formatted X-Ray
// trace header string"), and a refused message is retried until the stream
// mapping gives up on it. So the header is rebuilt from the fields above
// that have their shape, in X-Ray's order: one without a well-formed root,
// or with two roots, is none; another field of the wrong shape, repeated or
// unknown, is left out.
func traceHeader(ctx context.Context) string {
	raw, _ := ctx.Value(lambdaTraceKey).(string)
	if raw == "" {
		return ""
	}
	values := map[string]string{}
	seen := map[string]int{}
	for _, field := range strings.Split(raw, ";") {
		name, value, _ := strings.Cut(field, "=")
		seen[name]++
		values[name] = value
	}
	var b strings.Builder
	for i, f := range traceFields {
		v, ok := values[f.name]
		if !ok || seen[f.name] != 1 || !f.shape.MatchString(v) {
			if i == 0 {
				return "" // no trace to link to
			}
			continue
		}
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(f.name + "=" + v)
	}
	return b.String()
}
