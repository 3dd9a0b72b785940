package projection_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when any test leaves a goroutine behind: a handler
// must not outlive its invocation. Idle keep-alive connections of the SDK's
// HTTP client (integration tests) are the transport's, not leaks.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}
