// Package checksum holds the module's one rule for a SHA-256 written as text:
// 64 lower-case hex digits, as encoding/hex writes it. Jobs record it for the
// accepted result and candidates carry it in their metadata; both check it
// here.
package checksum

import (
	"crypto/sha256"
	"encoding/hex"
)

// IsSHA256Hex reports whether s is a SHA-256 sum in lower-case hex.
func IsSHA256Hex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// SHA256Hex returns the SHA-256 of b in lower-case hex.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
