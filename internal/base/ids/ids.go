// Package ids holds the one rule for the ids that become parts of S3 keys,
// FIFO group ids and DynamoDB keys: job ids and attempt ids are 1 to 128
// bytes of [A-Za-z0-9_-]. The alphabet has no slash and no dot, so an id can
// neither add a path segment nor be "..".
package ids

import "fmt"

// MaxLen is the longest valid id, in bytes.
const MaxLen = 128

// Problem says what is wrong with id, or returns "" if nothing is.
func Problem(id string) string {
	switch {
	case id == "":
		return "is empty"
	case len(id) > MaxLen:
		return fmt.Sprintf("is %d bytes long, more than %d", len(id), MaxLen)
	}
	for i := range len(id) {
		if c := id[i]; !allowed(c) {
			return fmt.Sprintf("has byte %q at offset %d; only A-Z a-z 0-9 _ - are allowed", c, i)
		}
	}
	return ""
}

func allowed(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}
