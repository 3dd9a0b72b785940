package localesm

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/fifoworker/fifoworker/internal/base/backoff"
)

// Defaults shared by both mappings.
const (
	// DefaultFunctionTimeout is Lambda's default function timeout.
	DefaultFunctionTimeout = 3 * time.Second
	// DefaultFunctionARN is given to the function as InvokedFunctionArn when
	// the configuration names none.
	DefaultFunctionARN = "arn:aws:lambda:us-east-1:000000000000:function:localesm"
	// maxFunctionTimeout is Lambda's limit.
	maxFunctionTimeout = 15 * time.Minute
	// retryBase and retryMax bound how long a mapping waits after a failed
	// AWS call or an invocation that could not be made before it tries
	// again: retryWait(n) before the nth retry in a row.
	retryBase = 500 * time.Millisecond
	retryMax  = 5 * time.Second
	// ackTimeout bounds the calls that record a finished invocation
	// (deleting messages, sending an on-failure record) once the mapping
	// is stopping: work the function completed is still acknowledged.
	ackTimeout = 10 * time.Second
)

// newRequestID returns a random version 4 UUID, the form of Lambda's
// request ids.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand documents it)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// retryWait is the wait before the retry-th retry in a row (1 for the
// first) of a failed AWS call or an invocation that could not be made:
// 250 to 500 ms the first time, doubling up to 2.5 to 5 s, jittered so that
// shards retrying together do not stay in step.
func retryWait(retry int) time.Duration { return backoff.Delay(retryBase, retryMax, retry) }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// functionDefaults fills in the defaults every mapping's configuration
// shares: the function's timeout and ARN, and the logger.
func functionDefaults(timeout *time.Duration, arn *string, logger **slog.Logger) {
	if *timeout == 0 {
		*timeout = DefaultFunctionTimeout
	}
	if *arn == "" {
		*arn = DefaultFunctionARN
	}
	if *logger == nil {
		*logger = discardLogger()
	}
}

// ErrInvalidConfig is wrapped by the error a constructor returns for a
// configuration that cannot work; the message names the field.
var ErrInvalidConfig = errors.New("localesm: invalid configuration")

// validateCommon checks what both mappings' configurations have: an
// invoker and a function timeout Lambda allows.
func validateCommon(invoker Invoker, timeout time.Duration) error {
	switch {
	case invoker == nil:
		return fmt.Errorf("%w: Invoker is nil", ErrInvalidConfig)
	case timeout <= 0 || timeout > maxFunctionTimeout:
		return fmt.Errorf("%w: FunctionTimeout %v is outside (0, %v]", ErrInvalidConfig, timeout, maxFunctionTimeout)
	}
	return nil
}
