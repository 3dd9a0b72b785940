package localesm

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"time"
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
	// retryBackoff is how long a mapping waits after a failed AWS call or
	// an invocation that could not be made before it tries again.
	retryBackoff = 500 * time.Millisecond
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

// sleep waits d or until ctx is done; it reports whether the full wait
// elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func validateCommon(timeout time.Duration) error {
	if timeout <= 0 || timeout > maxFunctionTimeout {
		return fmt.Errorf("localesm: function timeout %v is outside (0, %v]", timeout, maxFunctionTimeout)
	}
	return nil
}
