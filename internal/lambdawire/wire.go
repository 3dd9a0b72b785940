// Package lambdawire wires the functions: for each one a Builder that reads
// its settings (all at once, so that a misconfigured function names every
// problem in one cold-start error) and builds its handler from pkg/, and
// Main, which every functions/<name>/main.go calls. The local pipeline calls
// the same builders with the settings template.yaml gives each function, so
// a function runs the same code in Lambda, under the runtime interface
// emulator and in process. It holds no logic of the pipeline.
//
// The worker and the projector have a builder per transport: Worker and
// Projector consume SQS (template.yaml), WorkerKafka and ProjectorKafka
// Kafka (template-kafka.yaml). A bootstrap is built for one of them: the
// kafka build tag picks functions/<name>/main_kafka.go instead of main.go,
// so the linker keeps only that transport's processor (pkg/fifo's or
// pkg/kafka's); TRANSPORT in the environment says which a template
// deploys, and a builder of the other refuses to start (CheckTransport).
package lambdawire

import (
	"errors"
	"fmt"
	"log/slog"
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

// byField maps a constructor's Config fields ("Table", "Tables.Views") to
// the environment variables they were read from.
type byField map[string]string

// refuse records a constructor's refusal of settings read from the
// environment under the variables behind it: those whose field the error
// names (every constructor's error names its field), or, when it names
// none of them, all of fields. A cold start thus names the variable to
// fix, not only the Go field; errors.Is still finds the constructor's
// ErrInvalidConfig.
func (e *Env) refuse(err error, fields byField) {
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

// refused is refuse, then every problem found (Err): a builder's answer to
// a constructor's error.
func (e *Env) refused(err error, fields byField) error {
	e.refuse(err, fields)
	return e.Err()
}

// Refused is refused for the builders of other packages
// (internal/lambdawire/kafkarelay): fields maps their constructor's Config
// fields to the variables they were read from.
func (e *Env) Refused(err error, fields map[string]string) error {
	return e.refused(err, fields)
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

// Logger is the functions' logger: JSON lines on stdout, which Lambda sends
// to CloudWatch Logs.
func Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stdout, nil))
}

// Fatal logs err and exits: a function that cannot start must fail its
// init, which Lambda reports, rather than run half-configured.
func Fatal(log *slog.Logger, err error) {
	log.Error("init failed", "error", err)
	os.Exit(1)
}
