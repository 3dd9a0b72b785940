package localstack

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A stack's env file holds the environment a shell, or the CLI's operator
// commands (--stack), needs to use the stack: its endpoints, region and
// credentials (Env) and whatever the writer adds (the deployment's
// FIFOWORKER_* outputs, local tokens). It is the shell text the CLI prints
// to eval, so a shell can source it, and ReadEnvFile reads exactly what
// ShellExport writes and nothing else: the CLI never runs a shell on it.

// CheckName reports what is wrong with name as a stack's name, if
// anything.
func CheckName(name string) error {
	o := Options{Name: name, CacheDir: "unused"}
	return o.defaults()
}

// EnvFile is the path of the env file of the stack o names. It lies in
// the stack's state directory, so Down removes it with the stack.
func EnvFile(o Options) (string, error) {
	if err := o.defaults(); err != nil {
		return "", err
	}
	return filepath.Join(o.stateDir(), "env.sh"), nil
}

// ShellExport is one line a shell evals to set k to v: export k='v', with
// each ' of v written '\”.
func ShellExport(k, v string) string {
	return "export " + k + "='" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// WriteEnvFile writes text (lines of ShellExport, comments, blank lines) to
// path, readable by its owner only: it may hold tokens. It replaces the
// file in one rename, so a reader never sees half of it.
func WriteEnvFile(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("localstack: env file: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		return fmt.Errorf("localstack: env file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("localstack: env file: %w", err)
	}
	return nil
}

// ReadEnvFile reads the variables of an env file: lines of ShellExport,
// each optionally followed by a comment, and comment or blank lines. Any
// other line is an error that names the file and the line.
func ReadEnvFile(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("localstack: env file: %w", err)
	}
	vars, err := parseExports(string(raw))
	if err != nil {
		return nil, fmt.Errorf("localstack: env file %s: %w", path, err)
	}
	return vars, nil
}

func parseExports(s string) (map[string]string, error) {
	vars := map[string]string{}
	line := 1
	for len(s) > 0 {
		switch {
		case s[0] == '\n':
			s, line = s[1:], line+1
			continue
		case s[0] == '#':
			s = skipLine(s)
			continue
		case !strings.HasPrefix(s, "export "):
			return nil, fmt.Errorf("line %d: not export NAME='value'", line)
		}
		s = s[len("export "):]
		n := 0
		for n < len(s) && (s[n] == '_' || 'A' <= s[n] && s[n] <= 'Z' || 'a' <= s[n] && s[n] <= 'z' || n > 0 && '0' <= s[n] && s[n] <= '9') {
			n++
		}
		name := s[:n]
		if name == "" || !strings.HasPrefix(s[n:], "='") {
			return nil, fmt.Errorf("line %d: not export NAME='value'", line)
		}
		value, rest, lines, err := singleQuoted(s[n+1:])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if _, dup := vars[name]; dup {
			return nil, fmt.Errorf("line %d: %s is set twice", line, name)
		}
		vars[name] = value
		line += lines
		rest = strings.TrimLeft(rest, " \t")
		switch {
		case rest == "":
		case rest[0] == '#':
			rest = skipLine(rest)
		case rest[0] == '\n':
		default:
			return nil, fmt.Errorf("line %d: something follows the value of %s", line, name)
		}
		s = rest
	}
	return vars, nil
}

// singleQuoted reads a value as ShellExport quotes it, from its opening
// quote: the value, what follows it, and how many newlines it holds.
func singleQuoted(s string) (value, rest string, lines int, err error) {
	var b strings.Builder
	s = s[1:]
	for {
		end := strings.IndexByte(s, '\'')
		if end < 0 {
			return "", "", 0, errors.New("a quote is never closed")
		}
		b.WriteString(s[:end])
		s = s[end+1:]
		if !strings.HasPrefix(s, `\''`) {
			v := b.String()
			return v, s, strings.Count(v, "\n"), nil
		}
		b.WriteByte('\'')
		s = s[len(`\''`):]
	}
}

// skipLine returns s after its first line; the newline is left for the
// caller to count.
func skipLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i:]
	}
	return ""
}

// ErrStaleEnvFile marks a stack's env file that describes no running stack:
// the stack that wrote it was killed (its emulators are gone, or its state
// is), or the endpoints in it are not the running stack's. Its ports may be
// closed, or another stack's now.
var ErrStaleEnvFile = errors.New("stale env file")

// ReadStackEnv reads the env file of the stack o names (its variables and
// its path) if that stack runs and the file's endpoints are the stack's.
// A stack on an external endpoint that started no broker (not on Linux)
// has no process of ours: its state is taken as running. No file is an
// error that matches os.ErrNotExist; a stale one, ErrStaleEnvFile, naming
// the file and how to remove it.
func ReadStackEnv(o Options) (map[string]string, string, error) {
	if err := o.defaults(); err != nil {
		return nil, "", err
	}
	path, err := EnvFile(o)
	if err != nil {
		return nil, "", err
	}
	vars, err := ReadEnvFile(path)
	if err != nil {
		return nil, path, err
	}
	s, err := load(o)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, path, fmt.Errorf("localstack: %w %s: no stack %q is running; remove it: rm %s", ErrStaleEnvFile, path, o.Name, path)
	case err != nil:
		return nil, path, err
	case !running(s):
		return nil, path, fmt.Errorf("localstack: %w %s: stack %q is not running (its processes are gone); remove it: fifoworker local down --name %s", ErrStaleEnvFile, path, o.Name, o.Name)
	}
	if k := otherEndpoint(s, vars); k != "" {
		return nil, path, fmt.Errorf("localstack: %w %s: its %s is not running stack %q's; remove it: fifoworker local down --name %s", ErrStaleEnvFile, path, k, o.Name, o.Name)
	}
	return vars, path, nil
}

// otherEndpoint is an endpoint variable (AWS_ENDPOINT_URL*, the Kafka
// broker's, the PostgreSQL server's) in which vars and the stack s's
// environment differ, or "".
func otherEndpoint(s *State, vars map[string]string) string {
	isEndpoint := func(k string) bool {
		return strings.HasPrefix(k, "AWS_ENDPOINT_URL") || k == KafkaBootstrapVar || k == PostgresDSNVar
	}
	want := map[string]string{}
	for _, kv := range s.Env() {
		if k, v, _ := strings.Cut(kv, "="); isEndpoint(k) {
			want[k] = v
		}
	}
	for k := range vars {
		if _, ours := want[k]; !ours && isEndpoint(k) {
			want[k] = "" // an endpoint the stack does not have
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) { // the same one each time
		if vars[k] != want[k] {
			return k
		}
	}
	return ""
}
