package kafkaout_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
)

// The topic rule is a loop over the name's bytes: the package compiles
// no regular expression when it is initialised, which would be work of
// every relay's cold start.
func TestTheTopicRuleCompilesNothingAtInit(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		require.NoError(t, err, name)
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			require.NotEqual(t, "regexp", path, "%s imports regexp", name)
		}
	}
}

// ValidTopic accepts exactly Kafka's topic names (Topic.validate in
// Kafka's clients: 1 to 249 of [a-zA-Z0-9._-], and neither "." nor ".."),
// each bound tried at its value.
func TestValidTopicAcceptsExactlyKafkasTopicNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"", false},
		{"a", true},
		{strings.Repeat("a", 249), true},
		{strings.Repeat("a", 250), false},
		{strings.Repeat("a", 248) + "/", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"._", true},
		{"-", true},
		{"_", true},
		{"aZ09._-", true},
		{"fifoworker-commands", true},
		{"a b", false},
		{"a/b", false},
		{"a:b", false},
		{"a+b", false},
		{"a\x00", false},
		{"a\x7f", false},
		{"é", false},      // two bytes, neither legal
		{"a\xffb", false}, // not UTF-8
		{"@", false},      // just below 'A'
		{"[", false},      // just above 'Z'
		{"`", false},      // just below 'a'
		{"{", false},      // just above 'z'
		{"/", false},      // just below '0' (and just above '.')
		{":", false},      // just above '9'
		{",", false},      // just below '-'
		{"^", false},      // between 'Z' and '_'
	} {
		require.Equal(t, tc.ok, kafkaout.ValidTopic(tc.name), "%q (%d bytes)", tc.name, len(tc.name))
	}
	// Every byte alone, and as the last of 249: legal exactly when it is
	// one of [a-zA-Z0-9._-] (alone, "." is refused as a name).
	for b := range 256 {
		c := byte(b)
		legal := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		require.Equal(t, legal && c != '.', kafkaout.ValidTopic(string([]byte{c})), "byte %#x", c)
		require.Equal(t, legal, kafkaout.ValidTopic(strings.Repeat("t", 248)+string([]byte{c})), "byte %#x last of 249", c)
	}
}
