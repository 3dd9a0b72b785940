package fifo

import (
	"errors"
	"fmt"
)

// ErrInvalidBatch is wrapped by the error Process returns for a batch it
// refuses to process: a record without a message id, two records with the
// same message id, or records from different queues. Lambda's event source
// mapping never delivers such a batch; when one arrives anyway, failing it
// whole is the only answer that can neither reorder nor lose a message.
var ErrInvalidBatch = errors.New("invalid batch")

// InvalidBatchError says what made a batch invalid.
type InvalidBatchError struct {
	Reason    string // what is wrong, e.g. "duplicate message id"
	MessageID string // the offending record's message id, if it has one
	Index     int    // the offending record's position in the batch
}

func (e *InvalidBatchError) Error() string {
	return fmt.Sprintf("fifo: invalid batch: record %d (message id %q): %s", e.Index, e.MessageID, e.Reason)
}

// Unwrap lets errors.Is(err, ErrInvalidBatch) match.
func (e *InvalidBatchError) Unwrap() error { return ErrInvalidBatch }

// PermanentError marks a message that will never succeed, however often it
// is received (a malformed body, an unknown command type).
type PermanentError struct {
	Err error
}

// Permanent marks err as permanent. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }

// Unwrap returns the marked error.
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent reports whether err, or any error it wraps, was marked by Permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// PanicError is the failure recorded for a message whose handler panicked,
// or whose processing panicked in code the processor called for it: the
// dead-letter client, the logger, a method of the handler's error.
type PanicError struct {
	Value any       // what was panicked with
	Stack []byte    // the goroutine's stack at the panic
	In    PanicSite // what panicked; the zero value is the handler
}

func (e *PanicError) Error() string { return fmt.Sprintf("%s panicked: %v", e.In, e.Value) }

// PanicSite says what panicked.
type PanicSite uint8

// The sites of a panic.
const (
	PanicInHandler      PanicSite = iota // the Handler
	PanicInDeadLetter                    // the dead-letter client's SendMessage
	PanicInLogger                        // Config.Logger
	PanicInMetrics                       // Config.Metrics
	PanicInHandlerError                  // a method of the error the handler returned
	PanicInQuarantine                    // Config.Quarantine
)

var panicSites = [...]string{
	PanicInHandler:      "handler",
	PanicInDeadLetter:   "dead-letter send",
	PanicInLogger:       "logger",
	PanicInMetrics:      "metrics hook",
	PanicInHandlerError: "handler's error",
	PanicInQuarantine:   "quarantine",
}

func (s PanicSite) String() string {
	if int(s) < len(panicSites) {
		return panicSites[s]
	}
	return "unknown"
}
