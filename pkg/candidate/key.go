package candidate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fifoworker/fifoworker/internal/base/ids"
)

// Prefix is the part of every candidate key before the job id.
const Prefix = "candidates/"

// Limits of the parts of a key.
const (
	// MaxIDLength is the longest job id or attempt id, in bytes.
	MaxIDLength = ids.MaxLen
	// MaxExtLength is the longest extension.
	MaxExtLength = 16
	// MaxGeneration is the largest generation that fits the key's ten
	// digits. Zero-padding keeps a job's candidates listed in generation
	// order.
	MaxGeneration    = 9_999_999_999
	generationDigits = 10
)

// Key identifies one attempt's candidate. Its string form is
// candidates/<JobID>/g<Generation, 10 digits>/<AttemptID>.<Ext>.
type Key struct {
	JobID      string // [A-Za-z0-9_-]{1,128}
	Generation int64  // 1 to MaxGeneration
	AttemptID  string // [A-Za-z0-9_-]{1,128}
	Ext        string // [a-z0-9]{1,16}, without the dot
}

// NewKey returns the key of an attempt's candidate, or an error wrapping
// ErrInvalidKey that says which part is invalid.
func NewKey(jobID string, generation int64, attemptID, ext string) (Key, error) {
	k := Key{JobID: jobID, Generation: generation, AttemptID: attemptID, Ext: ext}
	if err := k.Validate(); err != nil {
		return Key{}, err
	}
	return k, nil
}

// Validate reports the first invalid part of k, wrapping ErrInvalidKey.
func (k Key) Validate() error {
	if reason := ids.Problem(k.JobID); reason != "" {
		return fmt.Errorf("candidate: job id %q %s: %w", k.JobID, reason, ErrInvalidKey)
	}
	if k.Generation < 1 || k.Generation > MaxGeneration {
		return fmt.Errorf("candidate: generation %d is outside 1..%d: %w", k.Generation, int64(MaxGeneration), ErrInvalidKey)
	}
	if reason := ids.Problem(k.AttemptID); reason != "" {
		return fmt.Errorf("candidate: attempt id %q %s: %w", k.AttemptID, reason, ErrInvalidKey)
	}
	if reason := extProblem(k.Ext); reason != "" {
		return fmt.Errorf("candidate: extension %q %s: %w", k.Ext, reason, ErrInvalidKey)
	}
	return nil
}

// String returns the S3 object key. It is meaningful only for a valid key.
func (k Key) String() string {
	var b strings.Builder
	b.Grow(len(Prefix) + len(k.JobID) + 2 + generationDigits + 1 + len(k.AttemptID) + 1 + len(k.Ext))
	b.WriteString(Prefix)
	b.WriteString(k.JobID)
	b.WriteString("/g")
	g := strconv.FormatInt(k.Generation, 10)
	for range generationDigits - len(g) {
		b.WriteByte('0')
	}
	b.WriteString(g)
	b.WriteByte('/')
	b.WriteString(k.AttemptID)
	b.WriteByte('.')
	b.WriteString(k.Ext)
	return b.String()
}

// JobPrefix returns the prefix under which every candidate of the job lies,
// ending in a slash so that job-4's prefix does not cover job-42's keys.
func JobPrefix(jobID string) (string, error) {
	if reason := ids.Problem(jobID); reason != "" {
		return "", fmt.Errorf("candidate: job id %q %s: %w", jobID, reason, ErrInvalidKey)
	}
	return Prefix + jobID + "/", nil
}

// ParseKey parses an S3 object key built by Key.String. It rejects every
// other string, including keys that differ only in the padding of the
// generation, so that ParseKey(s).String() == s whenever it succeeds.
func ParseKey(s string) (Key, error) {
	foreign := func(why string) (Key, error) {
		return Key{}, fmt.Errorf("candidate: %q is not a candidate key: %s: %w", s, why, ErrInvalidKey)
	}
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return foreign("it does not start with " + Prefix)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return foreign("want job id, generation and file name separated by slashes")
	}
	gen, ok := strings.CutPrefix(parts[1], "g")
	if !ok || len(gen) != generationDigits || !allDigits(gen) {
		return foreign("the generation is not g followed by 10 digits")
	}
	g, err := strconv.ParseInt(gen, 10, 64)
	if err != nil { // unreachable for 10 digits; kept so that a change cannot hide it
		return foreign(err.Error())
	}
	attempt, ext, ok := strings.Cut(parts[2], ".")
	if !ok {
		return foreign("the file name has no extension")
	}
	k := Key{JobID: parts[0], Generation: g, AttemptID: attempt, Ext: ext}
	if err := k.Validate(); err != nil {
		return Key{}, fmt.Errorf("candidate: %q is not a candidate key: %w", s, err)
	}
	return k, nil
}

func extProblem(ext string) string {
	switch {
	case ext == "":
		return "is empty"
	case len(ext) > MaxExtLength:
		return fmt.Sprintf("is %d bytes long, more than %d", len(ext), MaxExtLength)
	}
	for i := range len(ext) {
		if c := ext[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return fmt.Sprintf("has byte %q at offset %d; only a-z 0-9 are allowed", c, i)
		}
	}
	return ""
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
