package main

import (
	"net"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// busyConsole is a console whose every request is a redrive in flight
// until release is closed; entered is closed once one is.
type busyConsole struct {
	entered, release chan struct{}
	once             sync.Once
}

func (b *busyConsole) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	w.WriteHeader(http.StatusNoContent)
}

func (b *busyConsole) InFlight() []string {
	select {
	case <-b.entered:
		return []string{"a redrive of group g on commands"}
	default:
		return nil
	}
}

// A first Ctrl-C stops the console letting its redrive finish, saying
// what it waits for; a second stops it at once, and it says what it
// interrupted and how to resume (the process's default SIGINT handling
// would have ended it before it could).
func TestASecondSignalStopsTheConsoleSayingWhatItInterrupted(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := &busyConsole{entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(h.release) })
	sigs := make(chan os.Signal) // unbuffered: a send returns once the console took it
	stderr := newLines(t)
	done := make(chan error, 1)
	go func() { done <- serveConsole(t.Context(), sigs, ln, h, consoleStopGrace(true), stderr) }()
	go func() {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+ln.Addr().String()+"/quarantine/commands/g/redrive", nil)
		if err == nil {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}
	}()
	<-h.entered

	sigs <- os.Interrupt
	require.Equal(t, consoleWaitNotice(h.InFlight(), consoleStopGrace(true)), <-stderr.c, "the first stops gently, and says what it waits for")
	sigs <- os.Interrupt
	err = <-done
	require.ErrorContains(t, err, "a second signal")
	require.Equal(t, consoleInterruptedNotice(h.InFlight()), <-stderr.c)
	require.Contains(t, consoleInterruptedNotice(h.InFlight()), "interrupted a redrive of group g on commands: redrive again to resume")
}
