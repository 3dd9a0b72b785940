package pgwire

import (
	"bufio"
	"bytes"
	"database/sql/driver"
)

// SCRAM runs the client side of a SCRAM-SHA-256 exchange with a fixed
// nonce and user, for the RFC 7677 test vector.
func SCRAM(password, user, nonce string) (first func() []byte, final func([]byte) ([]byte, error), verify func([]byte) error) {
	s := &scramClient{password: password, user: user, nonce: nonce}
	return s.first, s.final, s.verify
}

// DecodeText is decodeText.
func DecodeText(oid uint32, raw []byte) (driver.Value, error) { return decodeText(oid, raw) }

// EncodeParam is the bytes Bind carries for v (nil: NULL).
func EncodeParam(v driver.Value) ([]byte, error) {
	var o out
	if err := o.param(v); err != nil {
		return nil, err
	}
	if int32(uint32(o[0])<<24|uint32(o[1])<<16|uint32(o[2])<<8|uint32(o[3])) == -1 {
		return nil, nil
	}
	return o[4:], nil
}

// ReadResults reads a server's answer to one round as results does, from
// raw: the fuzz target.
func ReadResults(raw []byte) error {
	c := &conn{r: bufio.NewReader(bytes.NewReader(raw))}
	_, err := c.results()
	return err
}
