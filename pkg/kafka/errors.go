package kafka

import (
	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// PermanentError marks a record that will never succeed, however often it
// is delivered (a value that is not JSON, an unknown command type). It is lanes.PermanentError with this
// package's mark: fifo.Permanent's is another type, so that a handler
// shared by both transports says which processor it answers.
type PermanentError = lanes.PermanentError[kafkaMark]

// kafkaMark is the mark of this package's PermanentError.
type kafkaMark struct{}

// Permanent marks err as permanent. Permanent(nil) is nil.
func Permanent(err error) error { return lanes.Permanent[kafkaMark](err) }

// IsPermanent reports whether err, or any error it wraps, was marked by Permanent.
func IsPermanent(err error) bool { return lanes.IsPermanent[kafkaMark](err) }

// PanicError is the failure recorded for a record whose handler panicked
// or called runtime.Goexit, or whose processing panicked in code the
// processor called for it: the lane key function, the dead-letter store,
// the logger, a method of the handler's error, the quarantine. It is
// lanes.PanicError (its Stack is nil for a Goexit).
type PanicError = lanes.PanicError

// PanicSite says what panicked.
type PanicSite = lanes.PanicSite

// The sites of a panic.
const (
	PanicInHandler      = lanes.PanicInHandler      // the Handler
	PanicInDeadLetter   = lanes.PanicInDeadLetter   // Config.DeadLetter's Send
	PanicInLogger       = lanes.PanicInLogger       // Config.Logger
	PanicInMetrics      = lanes.PanicInMetrics      // Config.Metrics
	PanicInHandlerError = lanes.PanicInHandlerError // a method of the error the handler returned
	PanicInLaneKey      = lanes.PanicInLaneKey      // Config.LaneKey
	PanicInQuarantine   = lanes.PanicInQuarantine   // a method of Config.Quarantine
)
