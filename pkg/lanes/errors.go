package lanes

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// PermanentError marks an item that will never succeed, however often it
// is delivered (a malformed body, an unknown command type). Each processor
// has its own mark M, and names PermanentError[M] as its own
// (fifo.PermanentError, kafka.PermanentError): one piece of code, and a
// handler's error tells which processor it was marked for.
type PermanentError[M any] struct {
	Err error
}

// Permanent marks err as permanent for the processor of mark M.
// Permanent(nil) is nil.
func Permanent[M any](err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError[M]{Err: err}
}

func (e *PermanentError[M]) Error() string { return "permanent: " + e.Err.Error() }

// Unwrap returns the marked error.
func (e *PermanentError[M]) Unwrap() error { return e.Err }

// IsPermanent reports whether err, or any error it wraps, was marked by
// Permanent[M].
func IsPermanent[M any](err error) bool {
	var p *PermanentError[M]
	return errors.As(err, &p)
}

// PanicError is the failure recorded for an item whose handler panicked or
// called runtime.Goexit, or whose processing panicked in code the
// processor called for it (In says what): the dead-letter store, the
// logger, a method of the handler's error, the quarantine, a lane key
// function. Contain and Guard return it.
type PanicError struct {
	Value any       // what was panicked with
	Stack []byte    // the goroutine's stack at the panic; nil for a Goexit
	In    PanicSite // what panicked; the zero value is the handler
}

func (e *PanicError) Error() string { return fmt.Sprintf("%s panicked: %v", e.In, e.Value) }

// PanicSite says what panicked.
type PanicSite uint8

// The sites of a panic. pkg/fifo has no lane key function: its
// PanicInQuarantine keeps the value it had before the sites moved here.
const (
	PanicInHandler      PanicSite = iota // the handler
	PanicInDeadLetter                    // the dead-letter store
	PanicInLogger                        // the logger
	PanicInMetrics                       // the metrics hook
	PanicInHandlerError                  // a method of the error the handler returned
	PanicInQuarantine                    // a method of the quarantine
	PanicInLaneKey                       // a lane key function (pkg/kafka's Config.LaneKey)
)

var panicSites = [...]string{
	PanicInHandler:      "handler",
	PanicInDeadLetter:   "dead-letter send",
	PanicInLogger:       "logger",
	PanicInMetrics:      "metrics hook",
	PanicInHandlerError: "handler's error",
	PanicInQuarantine:   "quarantine",
	PanicInLaneKey:      "lane key",
}

func (s PanicSite) String() string {
	if int(s) < len(panicSites) {
		return panicSites[s]
	}
	return "unknown"
}

// goexitValue is a PanicError's Value for a runtime.Goexit.
const goexitValue = "called runtime.Goexit"

// errHandlerGoexit is a handler's runtime.Goexit: one value for every item
// (never changed), so that an item's path allocates nothing for it.
var errHandlerGoexit = &PanicError{In: PanicInHandler, Value: goexitValue}

// Contain calls f, which runs code the processor does not control, and
// returns a panic in it as a *PanicError at in instead of letting it
// unwind further, or nil. A runtime.Goexit in f still ends the calling
// goroutine: a lane's goroutine is replaced when that happens (Run.Lanes),
// and code on a goroutine that must not end goes through Guard.
func Contain(in PanicSite, f func()) (pe *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			pe = &PanicError{In: in, Value: v, Stack: debug.Stack()}
		}
	}()
	f()
	return nil
}

// Guard is Contain for code on a goroutine that must not end (a
// processor's own, which would then never return): f runs on a goroutine
// of its own, which Guard waits for, so that a runtime.Goexit in f ends
// that goroutine only and comes back as a *PanicError (Value "called
// runtime.Goexit", no Stack).
func Guard(in PanicSite, f func()) *PanicError {
	done := make(chan *PanicError, 1)
	go func() {
		pe := &PanicError{In: in, Value: goexitValue}
		defer func() { done <- pe }()
		pe = Contain(in, f)
	}()
	return <-done
}
