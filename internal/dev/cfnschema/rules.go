package cfnschema

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// Service rules the registry schemas leave out, which AWS applies when it
// creates the resource.

// knownValues returns the values x may take: itself when it is a scalar,
// each value the template lets a parameter take for a Ref to one, nil
// when it is unknown.
func knownValues(x any, params map[string]samtemplate.Parameter) []any {
	if fn, arg, ok := intrinsic(x); ok {
		name, _ := arg.(string)
		p, isParam := params[name]
		if fn != "Ref" || !isParam {
			return nil
		}
		var out []any
		for _, c := range candidates(p) {
			out = append(out, c.value)
		}
		return out
	}
	switch x.(type) {
	case map[string]any, []any, nil:
		return nil
	}
	return []any{x}
}

// anyNumber reports whether some known value of x is a number for which
// pred holds, and the first such.
func anyNumber(x any, params map[string]samtemplate.Parameter, pred func(float64) bool) (any, bool) {
	for _, v := range knownValues(x, params) {
		if n, ok := number(v); ok && pred(n) {
			return v, true
		}
	}
	return nil, false
}

// envVarName is the name Lambda takes for an environment variable. The
// schema's pattern for them is the same unanchored, so that any name
// holding a letter and another character of those passes it; names it
// rejects it reports itself.
var (
	envVarName       = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]+$`)
	envVarNameSchema = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9_]+`)
)

// lambdaFunctionRules: Lambda's limits on a function's Timeout (at most
// 900 seconds) and MemorySize (128 to 10240 MB), and the names of its
// environment variables, which the schema does not give.
func lambdaFunctionRules(props map[string]any, params map[string]samtemplate.Parameter, root string) []Problem {
	var out []Problem
	if env, ok := props["Environment"].(map[string]any); ok {
		vars, _ := env["Variables"].(map[string]any)
		if _, _, isFn := intrinsic(vars); !isFn {
			for _, k := range sortedKeys(vars) {
				if !envVarName.MatchString(k) && envVarNameSchema.MatchString(k) {
					out = append(out, Problem{root + ".Environment.Variables." + k, "is not a name Lambda takes for an environment variable ([a-zA-Z][a-zA-Z0-9_]+)"})
				}
			}
		}
	}
	if v, ok := anyNumber(props["Timeout"], params, func(n float64) bool { return n > 900 }); ok {
		out = append(out, Problem{root + ".Timeout", fmt.Sprintf("%v is above Lambda's maximum of 900 seconds", v)})
	}
	if v, ok := anyNumber(props["MemorySize"], params, func(n float64) bool { return n < 128 || n > 10240 }); ok {
		out = append(out, Problem{root + ".MemorySize", fmt.Sprintf("%v is outside Lambda's 128 to 10240 MB", v)})
	}
	return out
}

// eventSource tells which kind of source an event source mapping reads
// (SQS, DynamoDB, Kinesis; "" when unknown) and, for SQS, whether the
// queue is a FIFO one.
func (c *registryContext) eventSource(arn any) (kind string, fifo bool) {
	if fn, arg, ok := intrinsic(arn); ok {
		if fn != "Fn::GetAtt" {
			return "", false
		}
		res, attr, ok := getAttArgs(arg)
		if !ok {
			return "", false
		}
		r := c.t.Resources[res]
		switch {
		case r.Type == "AWS::SQS::Queue" && attr == "Arn":
			return "SQS", isFifoQueue(r.Properties)
		case (r.Type == "AWS::DynamoDB::Table" || r.Type == "AWS::Serverless::SimpleTable") && attr == "StreamArn":
			return "DynamoDB", false
		case (r.Type == "AWS::Kinesis::Stream" || r.Type == "AWS::Kinesis::StreamConsumer") && (attr == "Arn" || attr == "ConsumerARN"):
			return "Kinesis", false
		}
		return "", false
	}
	s, ok := arn.(string)
	if !ok {
		return "", false
	}
	parts := strings.SplitN(s, ":", 6)
	if len(parts) < 6 || parts[0] != "arn" {
		return "", false
	}
	switch parts[2] {
	case "sqs":
		return "SQS", strings.HasSuffix(s, ".fifo")
	case "dynamodb":
		return "DynamoDB", false
	case "kinesis":
		return "Kinesis", false
	}
	return "", false
}

// isFifoQueue reports whether a queue's properties make it a FIFO queue:
// FifoQueue true, or a name ending in .fifo.
func isFifoQueue(props map[string]any) bool {
	if f, ok := props["FifoQueue"]; ok && sameScalar(f, true) {
		return true
	}
	switch name := props["QueueName"].(type) {
	case string:
		return strings.HasSuffix(name, ".fifo")
	case map[string]any:
		if tmpl, _, ok := subArgs(name["Fn::Sub"]); ok {
			return strings.HasSuffix(tmpl, ".fifo")
		}
	}
	return false
}

var (
	streamOnlyProps = []string{"StartingPosition", "StartingPositionTimestamp", "MaximumRetryAttempts",
		"BisectBatchOnFunctionError", "MaximumRecordAgeInSeconds", "ParallelizationFactor",
		"TumblingWindowInSeconds", "DestinationConfig"}
	sqsOnlyProps = []string{"ScalingConfig"}
)

// eventSourceRules: Lambda's rules for an event source mapping's
// parameters by source, from its documentation (Lambda parameters for
// SQS, DynamoDB and Kinesis event source mappings):
//   - SQS: no stream parameters (StartingPosition, MaximumRetryAttempts,
//     BisectBatchOnFunctionError, DestinationConfig, ...); a BatchSize
//     above 10 needs MaximumBatchingWindowInSeconds of at least 1; a FIFO
//     queue takes a BatchSize of at most 10 and no batching window.
//   - DynamoDB and Kinesis: StartingPosition is required (and
//     AT_TIMESTAMP is Kinesis's only); ScalingConfig is SQS's only.
//
// hint is the source's kind when the mapping says it otherwise (a SAM
// event's type), for an EventSourceArn that does not tell.
func (c *registryContext) eventSourceRules(props map[string]any, params map[string]samtemplate.Parameter, root, hint string) []Problem {
	kind, fifo := c.eventSource(props["EventSourceArn"])
	if kind == "" {
		kind = hint
	}
	var out []Problem
	addf := func(prop, format string, args ...any) {
		path := root
		if prop != "" {
			path += "." + prop
		}
		out = append(out, Problem{path, fmt.Sprintf(format, args...)})
	}
	switch kind {
	case "SQS":
		for _, k := range streamOnlyProps {
			if _, ok := props[k]; ok {
				addf(k, "Lambda takes %s only for stream sources (DynamoDB, Kinesis, Kafka), not for an SQS queue", k)
			}
		}
		batch := props["BatchSize"]
		window := props["MaximumBatchingWindowInSeconds"]
		if fifo {
			if v, ok := anyNumber(batch, params, func(n float64) bool { return n > 10 }); ok {
				addf("BatchSize", "%v is above 10, the most Lambda takes for a FIFO queue", v)
			}
			if v, ok := anyNumber(window, params, func(n float64) bool { return n > 0 }); ok {
				addf("MaximumBatchingWindowInSeconds", "%v: Lambda supports no batching window for a FIFO queue", v)
			}
			break
		}
		if v, ok := anyNumber(batch, params, func(n float64) bool { return n > 10 }); ok {
			_, windowed := anyNumber(window, params, func(n float64) bool { return n >= 1 })
			if window == nil || (!windowed && knownValues(window, params) != nil) {
				addf("BatchSize", "%v is above 10, which Lambda takes for SQS only with a MaximumBatchingWindowInSeconds of at least 1", v)
			}
		}
	case "DynamoDB", "Kinesis":
		if _, ok := props["StartingPosition"]; !ok {
			addf("", "missing StartingPosition, which Lambda requires for a %s stream", kind)
		}
		if kind == "DynamoDB" && sameScalar(props["StartingPosition"], "AT_TIMESTAMP") {
			addf("StartingPosition", "AT_TIMESTAMP is for Kinesis only: a DynamoDB stream takes LATEST or TRIM_HORIZON")
		}
		for _, k := range sqsOnlyProps {
			if _, ok := props[k]; ok {
				addf(k, "Lambda takes %s only for an SQS queue", k)
			}
		}
	}
	return out
}
