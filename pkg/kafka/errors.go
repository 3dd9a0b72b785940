package kafka

import (
	"errors"
	"fmt"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// PermanentError marks a record that will never succeed, however often it
// is delivered (a value that is not JSON, an unknown command type).
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

// PanicError is the failure recorded for a record whose handler panicked
// or called runtime.Goexit, or whose processing panicked in code the
// processor called for it: the lane key function, the dead-letter store,
// the logger, a method of the handler's error.
type PanicError struct {
	Value any       // what was panicked with
	Stack []byte    // the goroutine's stack at the panic; nil for a Goexit
	In    PanicSite // what panicked; the zero value is the handler
}

func (e *PanicError) Error() string { return fmt.Sprintf("%s panicked: %v", e.In, e.Value) }

// PanicSite says what panicked.
type PanicSite uint8

// The sites of a panic.
const (
	PanicInHandler      PanicSite = iota // the Handler
	PanicInDeadLetter                    // Config.DeadLetter's Send
	PanicInLogger                        // Config.Logger
	PanicInMetrics                       // Config.Metrics
	PanicInHandlerError                  // a method of the error the handler returned
	PanicInLaneKey                       // Config.LaneKey
	PanicInQuarantine                    // a method of Config.Quarantine
)

var panicSites = [...]string{
	PanicInHandler:      "handler",
	PanicInDeadLetter:   "dead-letter send",
	PanicInLogger:       "logger",
	PanicInMetrics:      "metrics hook",
	PanicInHandlerError: "handler's error",
	PanicInLaneKey:      "lane key",
	PanicInQuarantine:   "quarantine",
}

func (s PanicSite) String() string {
	if int(s) < len(panicSites) {
		return panicSites[s]
	}
	return "unknown"
}

// goexitValue is a PanicError's Value for a runtime.Goexit.
const goexitValue = "called runtime.Goexit"

// contained calls f, which runs code the processor does not control, and
// returns a panic in it as a *PanicError (in says what panicked) instead of
// letting it end the invocation. A runtime.Goexit in f still ends the
// calling goroutine: a lane's goroutine is replaced when that happens (see
// lanes.Run.Lanes), and Process's own goroutine calls foreign code only
// through guarded.
func contained(in PanicSite, f func()) *PanicError {
	return panicError(in, lanes.Contain(f))
}

// guarded is contained for code that runs on Process's own goroutine (the
// lane key function, the batch's logging, the metrics hook): f runs on a
// goroutine of its own, which guarded waits for, so that a runtime.Goexit
// in f ends that goroutine and not Process's, which would then never
// return. The Goexit comes back as a *PanicError like a panic.
func guarded(in PanicSite, f func()) *PanicError {
	return panicError(in, lanes.Guard(f))
}

// panicError is p as a *PanicError at in, or nil without p.
func panicError(in PanicSite, p *lanes.Panic) *PanicError {
	switch {
	case p == nil:
		return nil
	case p.Goexit:
		return &PanicError{In: in, Value: goexitValue}
	}
	return &PanicError{In: in, Value: p.Value, Stack: p.Stack}
}
