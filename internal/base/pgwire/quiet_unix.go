//go:build unix

package pgwire

import (
	"errors"
	"net"
	"syscall"
)

// endedWhileIdle reports whether the socket of an idle session holds
// anything to read or has ended: an idle session's server sends nothing
// until it is asked, so bytes there are its goodbye (a FATAL such as
// 57P01, idle_session_timeout's 25P04) or a stream out of step, and an
// end of file or an error is a closed socket. One non-blocking read on
// the TCP socket (under TLS too, whose records the session is dropped
// for), no round trip: what pgx's reset found with a ping.
func endedWhileIdle(raw net.Conn) bool {
	sc, ok := raw.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var readErr error
	var b [1]byte
	if err := rc.Read(func(fd uintptr) bool {
		_, readErr = syscall.Read(int(fd), b[:])
		return true // one attempt: never wait for data
	}); err != nil {
		return true
	}
	if errors.Is(readErr, syscall.EAGAIN) || errors.Is(readErr, syscall.EWOULDBLOCK) {
		return false // nothing to read: the session is quiet
	}
	return true // a byte, an end of file (0 bytes, no error) or an error
}
