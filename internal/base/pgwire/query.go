package pgwire

import (
	"bytes"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// maxParams is the protocol's bound on a statement's parameters.
const maxParams = 65535

// Type OIDs the decoding knows (pg_type.oid, fixed in every server).
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidOID         = 26
	oidJSON        = 114
	oidFloat4      = 700
	oidFloat8      = 701
	oidDate        = 1082
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidJSONB       = 3802
)

// result is what one statement returned: its columns and rows (decoded),
// and its command tag.
type result struct {
	columns []string
	oids    []uint32
	rows    [][]driver.Value
	tag     string
}

// rowsAffected is the count at the end of an INSERT, UPDATE, DELETE,
// MERGE, SELECT, COPY, FETCH or MOVE command tag; 0 for any other.
func (r *result) rowsAffected() int64 {
	i := strings.LastIndexByte(r.tag, ' ')
	if i < 0 {
		return 0
	}
	n, err := strconv.ParseInt(r.tag[i+1:], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// extended runs query with args as the unnamed statement: Parse, Bind,
// Describe, Execute and Sync in one write, then reads to ReadyForQuery.
func (c *conn) extended(query string, args []driver.NamedValue) (*result, error) {
	if len(args) > maxParams {
		return nil, fmt.Errorf("pgwire: %d arguments, over the protocol's %d", len(args), maxParams)
	}
	c.w = c.w[:0]
	at := c.w.begin('P')
	c.w.str("")
	c.w.str(query)
	c.w.i16(0) // the server infers each parameter's type
	c.w.end(at)

	at = c.w.begin('B')
	c.w.str("")
	c.w.str("")
	c.w.i16(len(args))
	for _, a := range args {
		if _, ok := a.Value.([]byte); ok {
			c.w.i16(1) // binary: a bytea's (or a text's) bytes as they are
		} else {
			c.w.i16(0)
		}
	}
	c.w.i16(len(args))
	for i, a := range args {
		if err := c.w.param(a.Value); err != nil {
			return nil, fmt.Errorf("pgwire: argument $%d: %w", i+1, err)
		}
	}
	c.w.i16(0) // every result column in text
	c.w.end(at)

	at = c.w.begin('D')
	c.w = append(c.w, 'P')
	c.w.str("")
	c.w.end(at)
	at = c.w.begin('E')
	c.w.str("")
	c.w.i32(0)
	c.w.end(at)
	at = c.w.begin('S')
	c.w.end(at)
	if err := c.flush(); err != nil {
		return nil, err
	}
	return c.results()
}

// simple runs query, which may hold several statements, through the
// simple protocol, and returns the last statement's result.
func (c *conn) simple(query string) (*result, error) {
	c.w = c.w[:0]
	at := c.w.begin('Q')
	c.w.str(query)
	c.w.end(at)
	if err := c.flush(); err != nil {
		return nil, err
	}
	return c.results()
}

// results reads the answers to a round of messages up to ReadyForQuery:
// the last statement's rows and tag, or the server's error, after which
// the connection is in step again.
func (c *conn) results() (*result, error) {
	res := &result{}
	var failed error // the first failure, returned at ReadyForQuery
	for {
		t, body, err := readMessage(c.r, &c.buf)
		if err != nil {
			var server *Error
			if errors.As(failed, &server) && server.fatal() {
				return nil, failed // why the server ended the session (57P01, …)
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		switch t {
		case '1', '2', 'n', 'I', 'N', 'A': // parse and bind complete, no data, empty query, notices, notifications
		case 'S':
			// A SET of a setting the decoding relies on: the statement
			// fails, and (its error not the server's) breaks the session.
			m := in{b: body}
			if err := checkParameter(&m); err != nil && failed == nil {
				failed = fmt.Errorf("pgwire: %w", err)
			}
		case 'T':
			res = &result{}
			if err := res.describe(body); err != nil {
				return nil, err
			}
		case 'D':
			row, err := res.decodeRow(body)
			if err != nil {
				if failed == nil {
					failed = fmt.Errorf("pgwire: %w", err)
				}
				continue
			}
			res.rows = append(res.rows, row)
		case 'C':
			res.tag = string(bytes.TrimRight(body, "\x00"))
		case 'E':
			if failed == nil {
				failed = parseError(body)
			}
		case 'Z':
			if len(body) != 1 {
				return nil, fmt.Errorf("%w: ReadyForQuery of %d bytes", errProtocol, len(body))
			}
			c.tx = body[0]
			if failed != nil {
				return nil, failed
			}
			return res, nil
		default:
			return nil, fmt.Errorf("%w: unexpected message %q", errProtocol, t)
		}
	}
}

// describe reads a RowDescription.
func (r *result) describe(body []byte) error {
	m := in{b: body}
	n := m.i16()
	for range n {
		name := m.str()
		m.i32() // table
		m.i16() // column number
		oid := m.u32()
		m.i16() // size
		m.i32() // modifier
		m.i16() // format: text, as Bind asked
		r.columns = append(r.columns, name)
		r.oids = append(r.oids, oid)
	}
	if m.bad || n < 0 {
		return fmt.Errorf("%w: short RowDescription", errProtocol)
	}
	return nil
}

// decodeRow reads a DataRow, each value decoded by its column's type.
func (r *result) decodeRow(body []byte) ([]driver.Value, error) {
	m := in{b: body}
	n := m.i16()
	if m.bad || n != len(r.oids) {
		return nil, fmt.Errorf("%w: a row of %d values for %d columns", errProtocol, n, len(r.oids))
	}
	row := make([]driver.Value, n)
	for i := range n {
		size := m.i32()
		if size == -1 {
			continue // NULL
		}
		raw := m.bytes(size)
		if m.bad {
			return nil, fmt.Errorf("%w: short DataRow", errProtocol)
		}
		v, err := decodeText(r.oids[i], raw)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", r.columns[i], err)
		}
		row[i] = v
	}
	return row, nil
}

// decodeText reads a value in text format as the Go type database/sql
// scans from.
func decodeText(oid uint32, raw []byte) (driver.Value, error) {
	switch oid {
	case oidInt2, oidInt4, oidInt8, oidOID:
		return strconv.ParseInt(string(raw), 10, 64)
	case oidFloat4, oidFloat8:
		return strconv.ParseFloat(string(raw), 64) // NaN, Infinity and -Infinity included
	case oidBool:
		switch string(raw) {
		case "t":
			return true, nil
		case "f":
			return false, nil
		}
		return nil, fmt.Errorf("bool %q", raw)
	case oidBytea:
		if !bytes.HasPrefix(raw, []byte(`\x`)) {
			return nil, errors.New(`bytea not in hex format (bytea_output must be hex)`)
		}
		out := make([]byte, hex.DecodedLen(len(raw)-2))
		_, err := hex.Decode(out, raw[2:])
		return out, err
	case oidJSON, oidJSONB:
		return bytes.Clone(raw), nil
	case oidDate:
		return time.Parse(time.DateOnly, string(raw))
	case oidTimestamp:
		return time.Parse("2006-01-02 15:04:05.999999999", string(raw))
	case oidTimestamptz:
		return parseTimestamptz(string(raw))
	}
	return string(raw), nil
}

// parseTimestamptz reads ISO output, whose offset is +HH, +HH:MM or
// +HH:MM:SS.
func parseTimestamptz(s string) (time.Time, error) {
	var err error
	for _, layout := range []string{"2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07:00:00"} {
		var t time.Time
		if t, err = time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamptz %q: %w", s, err)
}

// param appends one Bind parameter: its length and bytes, -1 for NULL.
func (o *out) param(v driver.Value) error {
	if b, isBytes := v.([]byte); v == nil || (isBytes && b == nil) {
		o.i32(-1) // NULL; a nil []byte too, as pgx and lib/pq send it (an empty one is an empty bytea)
		return nil
	}
	at := len(*o)
	o.i32(0)
	switch v := v.(type) {
	case int64:
		*o = strconv.AppendInt(*o, v, 10)
	case float64:
		*o = appendFloat(*o, v)
	case bool:
		*o = strconv.AppendBool(*o, v)
	case string:
		*o = append(*o, v...)
	case []byte:
		*o = append(*o, v...)
	case time.Time:
		// The offset to the second (local mean time has seconds), the
		// fraction cut to the server's microseconds: what it would round
		// (…59.9999995 into the next second) is cut, as pgx cut it.
		*o = v.AppendFormat(*o, "2006-01-02 15:04:05.999999-07:00:00")
	case []string:
		*o = appendTextArray(*o, v)
	case []int64:
		*o = appendIntArray(*o, v)
	default:
		return fmt.Errorf("type %T is not supported", v)
	}
	n := len(*o) - at - 4
	(*o)[at], (*o)[at+1], (*o)[at+2], (*o)[at+3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return nil
}

func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64) // NaN as "NaN", which the server reads
}

// appendTextArray renders ss as an array literal, each element quoted.
func appendTextArray(b []byte, ss []string) []byte {
	b = append(b, '{')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				b = append(b, '\\')
			}
			b = append(b, s[j])
		}
		b = append(b, '"')
	}
	return append(b, '}')
}

func appendIntArray(b []byte, vs []int64) []byte {
	b = append(b, '{')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return append(b, '}')
}
