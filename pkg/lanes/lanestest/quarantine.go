package lanestest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Call is one call a processor made to a fake quarantine.
type Call struct {
	Method string   // "check", "park", "done", "failed"
	Key    string   // the key held (a group, a lane key); empty for check
	Items  []string // the items named, in the call's order
	Cause  error    // park, failed
	Hold   bool     // park
	CtxErr error    // the context's error when the call was made
	Err    error    // what the call returned (nil while it has not returned)
	Ended  bool     // the call returned (not: panicked or called runtime.Goexit)
}

// String is the call in the short form the tests compare: "check a1 b1",
// "park a2 a3 hold", "park hold" (a re-hold), "done ac1".
func (c Call) String() string {
	parts := append([]string{c.Method}, c.Items...)
	if c.Hold {
		parts = append(parts, "hold")
	}
	return strings.Join(parts, " ")
}

// CallLog is the recording core of a fake quarantine: every call, in
// order, and every breach of contract the fake saw. Its lock also guards
// the fake's own state (Lock, Unlock).
type CallLog struct {
	sync.Mutex
	calls      []*Call
	violations []string
}

// Violate records a breach of contract; the caller holds the lock (Do's
// check does).
func (q *CallLog) Violate(format string, args ...any) {
	q.violations = append(q.violations, fmt.Sprintf(format, args...))
}

// Len is how many calls were made; the caller holds the lock.
func (q *CallLog) Len() int { return len(q.calls) }

// Do records c and runs check under the lock, then script, if any,
// without it (concurrently, from the lanes: an error it returns is the
// call's error, and it may panic or call runtime.Goexit instead), then,
// if the call is to succeed, update under the lock.
func (q *CallLog) Do(c *Call, script func(Call) error, check, update func()) error {
	q.Lock()
	q.calls = append(q.calls, c)
	check()
	q.Unlock()
	var err error
	if script != nil {
		err = script(*c)
	}
	q.Lock()
	defer q.Unlock()
	c.Err, c.Ended = err, true
	if err == nil {
		update()
	}
	return err
}

// Of returns the calls for key (for "": the calls to check), in the short
// form.
func (q *CallLog) Of(key string) []string {
	q.Lock()
	defer q.Unlock()
	out := []string{}
	for _, c := range q.calls {
		if c.Key == key {
			out = append(out, c.String())
		}
	}
	return out
}

// Nth returns the n-th call for key.
func (q *CallLog) Nth(t *testing.T, key string, n int) Call {
	t.Helper()
	q.Lock()
	defer q.Unlock()
	for _, c := range q.calls {
		if c.Key == key {
			if n == 0 {
				return *c
			}
			n--
		}
	}
	t.Fatalf("no such call for key %s", key)
	return Call{}
}

// Violations returns the breaches of contract seen so far.
func (q *CallLog) Violations() []string {
	q.Lock()
	defer q.Unlock()
	return append([]string(nil), q.violations...)
}

// Snapshot returns a copy of every call, in the order they were made.
func (q *CallLog) Snapshot() []Call {
	q.Lock()
	defer q.Unlock()
	out := make([]Call, len(q.calls))
	for i, c := range q.calls {
		out[i] = *c
	}
	return out
}

// RequireSound fails the test if the processor broke the quarantine's
// contract, or made a call with a dead context.
func (q *CallLog) RequireSound(t *testing.T) {
	t.Helper()
	q.Lock()
	defer q.Unlock()
	if len(q.violations) > 0 {
		t.Fatalf("the processor broke the quarantine's contract:\n%s", strings.Join(q.violations, "\n"))
	}
	for _, c := range q.calls {
		if c.CtxErr != nil {
			t.Fatalf("%s was called with a dead context: %v", c, c.CtxErr)
		}
	}
}

// Failing returns a script that makes every call to method fail as fault
// says ("error", "panic" or "goexit").
func Failing(method, fault string) func(Call) error {
	return func(c Call) error {
		if c.Method != method {
			return nil
		}
		switch fault {
		case "panic":
			panic("quarantine bug")
		case "goexit":
			runtime.Goexit()
		}
		return errors.New("dynamodb unavailable")
	}
}

// FaultText is the error that failed a quarantine call, as logged, for
// each fault of Failing.
var FaultText = map[string]string{
	"error":  "dynamodb unavailable",
	"panic":  "quarantine panicked: quarantine bug",
	"goexit": "quarantine panicked: called runtime.Goexit",
}

// ErrPanics makes a test handler panic (Act), ErrGoexit makes it call
// runtime.Goexit.
var (
	ErrPanics = errors.New("the handler panics")
	ErrGoexit = errors.New("the handler calls runtime.Goexit")
)

// Act is what a test handler does for item name told err: it panics for
// ErrPanics, ends its goroutine for ErrGoexit, else returns err.
func Act(name string, err error) error {
	switch {
	case errors.Is(err, ErrPanics):
		panic("handler bug in " + name)
	case errors.Is(err, ErrGoexit):
		runtime.Goexit()
	}
	return err
}

// Returns runs f in a synctest bubble, on a goroutine of its own, and
// fails the test if f does not return (a runtime.Goexit ended it), so that
// a Goexit that ends a processor's Process is a failure of the test and
// not the end of it.
func Returns(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		returned := make(chan struct{})
		go func() {
			f(t)
			close(returned) // not deferred: a Goexit in f must not close it
		}()
		select {
		case <-returned:
		case <-time.After(time.Hour): // the bubble's time: only reached if f never returns
			t.Fatal("it did not return")
		}
	})
}

// HeldKeys is a fake quarantine's state as a store would keep it: each
// key's hold (Holds), and each item's key and batch position, from which
// it checks that the calls name a key's items in lane order. Its caller
// holds the CallLog's lock (in Do's check and update).
type HeldKeys[K comparable, H any] struct {
	Holds map[K]H
	pos   map[string]int // batch position of each item check got
	key   map[string]K   // key of each item check got
	last  map[K]int      // per key: position of the last item a call named
}

// Checked starts the state from check's call, the batch's first: the
// items it got (by name, with their keys, in batch order) and the holds
// of the view it returns.
func (h *HeldKeys[K, H]) Checked(log *CallLog, names []string, keys []K, holds map[K]H) {
	if log.Len() != 1 {
		log.Violate("check is call %d, not the first and only check", log.Len())
	}
	h.pos, h.key, h.last, h.Holds = map[string]int{}, map[string]K{}, map[K]int{}, map[K]H{}
	for k, hold := range holds {
		h.Holds[k] = hold
	}
	for i, n := range names {
		h.pos[n], h.key[n] = i, keys[i]
		h.last[keys[i]] = -1
	}
}

// InLaneOrder checks that items, named by a call for key, are key's and
// come after every item an earlier call for key named, in batch order.
func (h *HeldKeys[K, H]) InLaneOrder(log *CallLog, key K, items []string) {
	for _, n := range items {
		p, ok := h.pos[n]
		switch {
		case !ok:
			log.Violate("%s was not given to check", n)
		case h.key[n] != key:
			log.Violate("%s of key %v named in a call for key %v", n, h.key[n], key)
		case p <= h.last[key]:
			log.Violate("%s named out of lane order in key %v", n, key)
		default:
			h.last[key] = p
		}
	}
}

// NotPast checks that item, named by a call for key that does not end
// with it (a count of its failure: it may be parked next), is key's and
// comes after every item named so far.
func (h *HeldKeys[K, H]) NotPast(log *CallLog, key K, item string) {
	if p, ok := h.pos[item]; !ok || p <= h.last[key] || h.key[item] != key {
		log.Violate("%s named out of lane order in key %v", item, key)
	}
}

// Names names items, in order.
func Names[T any](items []*T, name func(*T) string) []string {
	var out []string
	for _, it := range items {
		out = append(out, name(it))
	}
	return out
}
