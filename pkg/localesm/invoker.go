package localesm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Invoker runs one synchronous invocation of a function, like Lambda's
// Invoke API with the RequestResponse invocation type. Func runs a Go
// handler in this process; RIE posts to the runtime interface emulator.
//
// Invoke returns an error only when the invocation could not be made or its
// outcome is unknown (the emulator is unreachable, the mapping is stopping);
// everything the function itself did, including failing and timing out, is
// in the Result.
type Invoker interface {
	Invoke(ctx context.Context, inv Invocation) (Result, error)
}

// Invocation is what a mapping asks an Invoker to run.
type Invocation struct {
	RequestID   string // the invocation's id; Func passes it as AwsRequestID
	FunctionARN string // passed as InvokedFunctionArn
	// Timeout is the function's time budget (default
	// DefaultFunctionTimeout). It starts when the function starts: an
	// invoker that makes invocations wait for one another (RIE) computes
	// the deadline only once the invocation's turn has come, so time spent
	// waiting is not taken from the function.
	Timeout time.Duration
	Payload []byte // the event, as JSON
}

// timeout is inv.Timeout with its default.
func (inv Invocation) timeout() time.Duration {
	if inv.Timeout <= 0 {
		return DefaultFunctionTimeout
	}
	return inv.Timeout
}

// ConcurrencyLimiter is an optional capability of an Invoker that runs at
// most MaxConcurrency invocations at once and makes further Invoke calls
// wait (RIE: 1). An SQSMapping discovers it by type assertion and runs no
// more invocations than that, so that it never receives a batch the
// invoker cannot start at once. An Invoker without it (Func) is taken to
// run any number of invocations at once.
type ConcurrencyLimiter interface {
	MaxConcurrency() int
}

// MaxResponseSize is the largest response, in bytes, a function may return
// to a synchronous invocation. Lambda's quota is 6 MB; aws-lambda-rie
// enforces it as 6 MiB + 100 bytes (6,291,556), the figure in the error
// Lambda reports. Both invokers fail a longer response as Lambda does, with
// a function error of type Function.ResponseSizeTooLarge: an SQS batch
// fails as a whole and returns to the queue, a stream batch is retried.
const MaxResponseSize = 6<<20 + 100

// Status says how an invocation ended.
type Status int

const (
	// StatusOK means the function returned a response (which may still report
	// failed items).
	StatusOK Status = iota
	// StatusFunctionError means the function returned an error, panicked or
	// crashed. Lambda reports this as X-Amz-Function-Error: Unhandled.
	StatusFunctionError
	// StatusTimeout means the function did not return before its deadline.
	StatusTimeout
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusFunctionError:
		return "function_error"
	case StatusTimeout:
		return "timeout"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Result is the outcome of an invocation.
type Result struct {
	Status Status
	// Payload is the function's response, or for a failure the error
	// document ({"errorMessage": ..., "errorType": ...}) or the emulator's
	// timeout message.
	Payload []byte
}

// errorDocument is the JSON body the Lambda runtimes return for an error.
type errorDocument struct {
	ErrorMessage string   `json:"errorMessage"`
	ErrorType    string   `json:"errorType"`
	StackTrace   []string `json:"stackTrace,omitempty"`
}

func errorResult(status Status, errorType, message string) Result {
	b, err := json.Marshal(errorDocument{ErrorMessage: message, ErrorType: errorType})
	if err != nil { // cannot happen: two strings
		b = []byte(`{"errorType":"Runtime.MarshalError"}`)
	}
	return Result{Status: status, Payload: b}
}

// timeoutResult is the result of an invocation cut off after timeout,
// worded as Lambda words it.
func timeoutResult(timeout time.Duration) Result {
	return errorResult(StatusTimeout, "Sandbox.Timedout", fmt.Sprintf("Task timed out after %.2f seconds", timeout.Seconds()))
}

// responseTooLarge is the result of an invocation whose response of size
// bytes exceeds MaxResponseSize: a function error, typed and worded as
// Lambda's, with the size added.
func responseTooLarge(size int64) Result {
	return errorResult(StatusFunctionError, "Function.ResponseSizeTooLarge",
		fmt.Sprintf("Response payload size (%d bytes) exceeded maximum allowed payload size (%d bytes).", size, MaxResponseSize))
}

// errNilHandler is the error of every invocation of Func(nil), worded as
// the Go runtime's.
var errNilHandler = errors.New("handler is nil")

func errorTypeName(err error) string {
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// Func returns an Invoker that runs fn in this process as the Lambda Go
// runtime would: the payload is decoded into E, fn runs with a context that
// carries a deadline the invocation's Timeout away (fn starts at once) and
// a lambdacontext.LambdaContext, and
// its response is encoded as JSON. An error or a panic is a function error;
// a return after the deadline is a timeout, and its response is discarded as
// Lambda discards it; a response longer than MaxResponseSize is a function
// error of type Function.ResponseSizeTooLarge.
//
// Lambda stops a function at its deadline; a goroutine cannot be stopped, so
// Invoke waits for fn to return even past the deadline. A handler that
// honours its context returns promptly; one that does not keeps its
// invocation slot (and its message groups, or its shard) busy until it
// returns, which is what makes the mapping's guarantees hold for it too.
// Calls are not serialised: each concurrent invocation is like a separate
// execution environment.
//
// A nil fn does not panic: every invocation is a function error, "handler
// is nil", as the Go runtime answers it (aws-lambda-go's lambda.NewHandler).
func Func[E, R any](fn func(context.Context, E) (R, error)) Invoker {
	return funcInvoker[E, R]{fn: fn}
}

type funcInvoker[E, R any] struct {
	fn func(context.Context, E) (R, error)
}

func (f funcInvoker[E, R]) Invoke(ctx context.Context, inv Invocation) (Result, error) {
	if f.fn == nil {
		return errorResult(StatusFunctionError, errorTypeName(errNilHandler), errNilHandler.Error()), nil
	}
	var ev E
	if err := json.Unmarshal(inv.Payload, &ev); err != nil {
		return errorResult(StatusFunctionError, "Runtime.UnmarshalError", err.Error()), nil
	}
	timeout := inv.timeout()
	deadline := time.Now().Add(timeout)
	hctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	hctx = lambdacontext.NewContext(hctx, &lambdacontext.LambdaContext{
		AwsRequestID:       inv.RequestID,
		InvokedFunctionArn: inv.FunctionARN,
	})

	resp, panicked, err := f.call(hctx, ev)
	if !time.Now().Before(deadline) {
		return timeoutResult(timeout), nil
	}
	if panicked != nil {
		return *panicked, nil
	}
	if err != nil {
		return errorResult(StatusFunctionError, errorTypeName(err), err.Error()), nil
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return errorResult(StatusFunctionError, "Runtime.MarshalError", err.Error()), nil
	}
	if len(b) > MaxResponseSize {
		return responseTooLarge(int64(len(b))), nil
	}
	return Result{Status: StatusOK, Payload: b}, nil
}

// call runs the handler and turns a panic into a function error, as the Go
// runtime does.
func (f funcInvoker[E, R]) call(ctx context.Context, ev E) (resp R, panicked *Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			b, merr := json.Marshal(errorDocument{
				ErrorMessage: fmt.Sprint(v),
				ErrorType:    "Runtime.Panic",
				StackTrace:   []string{string(debug.Stack())},
			})
			if merr != nil {
				b = []byte(`{"errorType":"Runtime.Panic"}`)
			}
			panicked = &Result{Status: StatusFunctionError, Payload: b}
		}
	}()
	resp, err = f.fn(ctx, ev)
	return resp, nil, err
}
