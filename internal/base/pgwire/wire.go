package pgwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxMessage bounds a server message's length: PostgreSQL's own limit on
// a field is 1 GB, and a larger length is a stream out of step.
const maxMessage = 1 << 30

// errProtocol is a message the driver did not expect, or cannot read: the
// connection is out of step and is dropped.
var errProtocol = errors.New("pgwire: protocol error")

// Error is an ErrorResponse of the server: the statement failed, and the
// connection is usable unless Severity is FATAL or PANIC (the server
// ended the session: an administrator's command, a shutdown).
type Error struct {
	Severity   string // ERROR, FATAL or PANIC (the non-localised field)
	Code       string // the SQLSTATE
	Message    string
	Detail     string
	Hint       string
	Where      string
	Schema     string
	Table      string
	Column     string
	Constraint string
}

func (e *Error) Error() string { return e.Severity + ": " + e.Message + " (SQLSTATE " + e.Code + ")" }

// SQLState is the error's SQLSTATE (internal/base/pgcode reads it).
func (e *Error) SQLState() string { return e.Code }

// fatal reports whether the server ended the session with the error.
func (e *Error) fatal() bool { return e.Severity == "FATAL" || e.Severity == "PANIC" }

// parseError reads an ErrorResponse's (or NoticeResponse's) fields.
func parseError(body []byte) *Error {
	e := &Error{}
	for len(body) > 1 {
		field := body[0]
		end := indexZero(body[1:])
		if end < 0 {
			break
		}
		v := string(body[1 : 1+end])
		body = body[2+end:]
		switch field {
		case 'V':
			e.Severity = v
		case 'S':
			if e.Severity == "" {
				e.Severity = v
			}
		case 'C':
			e.Code = v
		case 'M':
			e.Message = v
		case 'D':
			e.Detail = v
		case 'H':
			e.Hint = v
		case 'W':
			e.Where = v
		case 's':
			e.Schema = v
		case 't':
			e.Table = v
		case 'c':
			e.Column = v
		case 'n':
			e.Constraint = v
		}
	}
	return e
}

func indexZero(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// out builds the frontend messages of one write.
type out []byte

// begin starts a message of type t (0: the start-up packet, which has no
// type byte) and returns where its length goes, for end.
func (o *out) begin(t byte) int {
	if t != 0 {
		*o = append(*o, t)
	}
	at := len(*o)
	*o = append(*o, 0, 0, 0, 0)
	return at
}

// end writes the length of the message whose length goes at at: itself
// and what follows it.
func (o *out) end(at int) {
	binary.BigEndian.PutUint32((*o)[at:], uint32(len(*o)-at))
}

func (o *out) str(s string) { *o = append(append(*o, s...), 0) }
func (o *out) i16(v int)    { *o = binary.BigEndian.AppendUint16(*o, uint16(v)) }
func (o *out) i32(v int)    { *o = binary.BigEndian.AppendUint32(*o, uint32(v)) }

// in reads a backend message's fields; a short message sets bad.
type in struct {
	b   []byte
	bad bool
}

// fixed takes the next n bytes (n is 2 or 4), zeros when the message is
// shorter.
func (r *in) fixed(n int) []byte {
	if len(r.b) < n {
		r.bad = true
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *in) i16() int    { return int(int16(binary.BigEndian.Uint16(r.fixed(2)))) }
func (r *in) i32() int    { return int(int32(binary.BigEndian.Uint32(r.fixed(4)))) }
func (r *in) u32() uint32 { return binary.BigEndian.Uint32(r.fixed(4)) }

func (r *in) str() string {
	i := indexZero(r.b)
	if i < 0 {
		r.bad = true
		return ""
	}
	s := string(r.b[:i])
	r.b = r.b[i+1:]
	return s
}

// bytes reads n bytes (a slice of the message, valid until the next read).
func (r *in) bytes(n int) []byte {
	if n < 0 || len(r.b) < n {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// readMessage reads one message: its type and body, the body in buf's
// storage (grown as needed) and valid until the next read.
func readMessage(r io.Reader, buf *[]byte) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:])) - 4
	if n < 0 || n > maxMessage {
		return 0, nil, fmt.Errorf("%w: message %q of %d bytes", errProtocol, hdr[0], n)
	}
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	body := (*buf)[:n]
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return hdr[0], body, nil
}
