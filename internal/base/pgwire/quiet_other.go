//go:build !unix

package pgwire

import "net"

// endedWhileIdle cannot look at the socket without blocking here: a
// session the server ended fails its next call instead.
func endedWhileIdle(net.Conn) bool { return false }
