package fifo

import (
	"errors"
	"fmt"

	"github.com/fifoworker/fifoworker/pkg/lanes"
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
// is received (a malformed body, an unknown command type). It is lanes.PermanentError with this
// package's mark: kafka.Permanent's is another type, so that a handler
// shared by both transports says which processor it answers.
type PermanentError = lanes.PermanentError[sqsMark]

// sqsMark is the mark of this package's PermanentError.
type sqsMark struct{}

// Permanent marks err as permanent. Permanent(nil) is nil.
func Permanent(err error) error { return lanes.Permanent[sqsMark](err) }

// IsPermanent reports whether err, or any error it wraps, was marked by Permanent.
func IsPermanent(err error) bool { return lanes.IsPermanent[sqsMark](err) }

// PanicError is the failure recorded for a message whose handler panicked
// or called runtime.Goexit, or whose processing panicked in code the
// processor called for it: the dead-letter client, the logger, a method
// of the handler's error, the quarantine. It is lanes.PanicError.
type PanicError = lanes.PanicError

// PanicSite says what panicked.
type PanicSite = lanes.PanicSite

// The sites of a panic.
const (
	PanicInHandler      = lanes.PanicInHandler      // the Handler
	PanicInDeadLetter   = lanes.PanicInDeadLetter   // the dead-letter client's SendMessage
	PanicInLogger       = lanes.PanicInLogger       // Config.Logger
	PanicInMetrics      = lanes.PanicInMetrics      // Config.Metrics
	PanicInHandlerError = lanes.PanicInHandlerError // a method of the error the handler returned
	PanicInQuarantine   = lanes.PanicInQuarantine   // Config.Quarantine
)
