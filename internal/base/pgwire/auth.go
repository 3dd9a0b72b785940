package pgwire

import (
	"crypto/hmac"
	"crypto/md5" //nolint:gosec // PostgreSQL's md5 password method is MD5 by definition
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// md5Password is the answer to the md5 method: "md5" and the hex of
// md5(hex(md5(password + user)) + salt).
func md5Password(user, password string, salt []byte) string {
	inner := md5.Sum([]byte(password + user))                               //nolint:gosec // the method's definition
	outer := md5.Sum(append([]byte(hex.EncodeToString(inner[:])), salt...)) //nolint:gosec // the method's definition
	return "md5" + hex.EncodeToString(outer[:])
}

// errSCRAM is a SCRAM exchange the server did not hold up its side of.
var errSCRAM = errors.New("pgwire: SCRAM-SHA-256")

// scramClient is the client side of one SCRAM-SHA-256 exchange (RFC 5802,
// RFC 7677) without channel binding. PostgreSQL takes the user from the
// start-up packet, so the first message names none (n=).
type scramClient struct {
	password    string
	user        string // "" for PostgreSQL; the RFC's test vector names one
	nonce       string
	firstBare   string
	authMessage string
	salted      []byte
	verified    bool // the server's signature checked out
}

func newSCRAM(password string) (*scramClient, error) {
	var raw [18]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	return &scramClient{password: password, nonce: base64.StdEncoding.EncodeToString(raw[:])}, nil
}

// first is the client-first-message: no channel binding ("n,,").
func (s *scramClient) first() []byte {
	s.firstBare = "n=" + s.user + ",r=" + s.nonce
	return []byte("n,," + s.firstBare)
}

// final reads the server-first-message and returns the client-final one.
func (s *scramClient) final(serverFirst []byte) ([]byte, error) {
	attrs := scramAttrs(string(serverFirst))
	nonce, salt64, iters := attrs["r"], attrs["s"], attrs["i"]
	if !strings.HasPrefix(nonce, s.nonce) || len(nonce) == len(s.nonce) {
		return nil, fmt.Errorf("%w: the server's nonce does not extend the client's", errSCRAM)
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil || len(salt) == 0 {
		return nil, fmt.Errorf("%w: the server's salt is not base64", errSCRAM)
	}
	n, err := strconv.Atoi(iters)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("%w: the server's iteration count %q", errSCRAM, iters)
	}
	s.salted, err = pbkdf2.Key(sha256.New, s.password, salt, n, sha256.Size)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSCRAM, err)
	}
	withoutProof := "c=biws,r=" + nonce // biws: base64 of "n,,"
	s.authMessage = s.firstBare + "," + string(serverFirst) + "," + withoutProof
	clientKey := mac(s.salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	proof := mac(stored[:], s.authMessage)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	return []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)), nil
}

// verify checks the server-final-message's signature: the server knew
// the password too.
func (s *scramClient) verify(serverFinal []byte) error {
	if s.authMessage == "" {
		// Before the server-first message there is nothing to sign: a
		// signature over nothing proves no password.
		return fmt.Errorf("%w: the server's final message came out of order", errSCRAM)
	}
	attrs := scramAttrs(string(serverFinal))
	if e, ok := attrs["e"]; ok {
		return fmt.Errorf("%w: the server refused: %s", errSCRAM, e)
	}
	got, err := base64.StdEncoding.DecodeString(attrs["v"])
	if err != nil {
		return fmt.Errorf("%w: the server's signature is not base64", errSCRAM)
	}
	want := mac(mac(s.salted, "Server Key"), s.authMessage)
	if !hmac.Equal(got, want) {
		return fmt.Errorf("%w: the server's signature is wrong", errSCRAM)
	}
	s.verified = true
	return nil
}

func mac(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// scramAttrs reads a SCRAM message's k=v attributes.
func scramAttrs(msg string) map[string]string {
	attrs := map[string]string{}
	for _, part := range strings.Split(msg, ",") {
		if k, v, ok := strings.Cut(part, "="); ok && len(k) == 1 {
			attrs[k] = v
		}
	}
	return attrs
}
