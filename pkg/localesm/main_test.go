package localesm

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when any test leaves a goroutine behind. Idle
// keep-alive connections of the SDK's and the RIE invoker's HTTP clients are
// not leaks: the transport owns them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}
