package startup

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Env reads settings and collects what is wrong with them.
type Env struct {
	lookup func(string) (string, bool)
	errs   []error
}

// NewEnv reads the process environment.
func NewEnv() *Env { return &Env{lookup: os.LookupEnv} }

// NewEnvFrom reads m instead of the process environment (for tests).
func NewEnvFrom(m map[string]string) *Env {
	return &Env{lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok }}
}

// String returns a required setting.
func (e *Env) String(name string) string {
	v, ok := e.lookup(name)
	if !ok || v == "" {
		e.errs = append(e.errs, fmt.Errorf("%s is not set", name))
	}
	return v
}

// StringOr returns an optional setting, or def.
func (e *Env) StringOr(name, def string) string {
	if v, ok := e.lookup(name); ok && v != "" {
		return v
	}
	return def
}

// Int returns an optional integer setting within [lo, hi], or def.
func (e *Env) Int(name string, def, lo, hi int) int {
	v, ok := e.lookup(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		e.errs = append(e.errs, fmt.Errorf("%s=%q is not an integer in [%d, %d]", name, v, lo, hi))
		return def
	}
	return n
}

// Duration returns an optional duration setting (Go syntax, "90s") within
// [lo, hi], or def.
func (e *Env) Duration(name string, def, lo, hi time.Duration) time.Duration {
	v, ok := e.lookup(name)
	if !ok || v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		e.errs = append(e.errs, fmt.Errorf("%s=%q is not a duration in [%v, %v]", name, v, lo, hi))
		return def
	}
	return d
}

// Problem records a problem with setting name that its value alone shows
// (a malformed ARN, say).
func (e *Env) Problem(name string, err error) {
	e.errs = append(e.errs, fmt.Errorf("%s: %w", name, err))
}

// Fields maps a constructor's Config fields ("Table", "Tables.Views") to
// the environment variables they were read from.
type Fields map[string]string

// Refuse records a constructor's refusal of settings read from the
// environment under the variables behind it: those whose field the error
// names (every constructor's error names its field), or, when it names
// none of them, all of fields. A cold start thus names the variable to
// fix, not only the Go field; errors.Is still finds the constructor's
// ErrInvalidConfig.
func (e *Env) Refuse(err error, fields Fields) {
	msg := err.Error()
	var named, all []string
	for field, name := range fields {
		all = append(all, name)
		if namesField(msg, field) {
			named = append(named, name)
		}
	}
	if len(named) == 0 {
		named = all
	}
	slices.Sort(named)
	e.Problem(strings.Join(slices.Compact(named), " or "), err)
}

// Refused is Refuse, then every problem found (Err): a builder's answer to
// a constructor's error.
func (e *Env) Refused(err error, fields Fields) error {
	e.Refuse(err, fields)
	return e.Err()
}

// namesField reports whether msg has field as a word of its own: not
// inside a longer name ("MaxSizes" does not name MaxSize), though it may
// follow a dot ("Recovery.MaxGenerations" names MaxGenerations).
func namesField(msg, field string) bool {
	word := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	for i := 0; ; {
		j := strings.Index(msg[i:], field)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(field)
		before, _ := utf8.DecodeLastRuneInString(msg[:start])
		after, _ := utf8.DecodeRuneInString(msg[end:])
		if (start == 0 || !word(before)) && (end == len(msg) || !word(after)) {
			return true
		}
		i = start + 1
	}
}

// Err returns every problem found so far, or nil.
func (e *Env) Err() error {
	if len(e.errs) == 0 {
		return nil
	}
	return fmt.Errorf("lambdawire: misconfigured function: %w", errors.Join(e.errs...))
}
