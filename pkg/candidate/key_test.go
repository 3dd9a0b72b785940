package candidate_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fifoworker/fifoworker/pkg/candidate"
)

func TestKeyString(t *testing.T) {
	t.Parallel()
	k, err := candidate.NewKey("job-42", 2, "attempt_B-7", "json")
	require.NoError(t, err)
	require.Equal(t, "candidates/job-42/g0000000002/attempt_B-7.json", k.String())

	k, err = candidate.NewKey("j", candidate.MaxGeneration, "a", "x")
	require.NoError(t, err)
	require.Equal(t, "candidates/j/g9999999999/a.x", k.String())

	p, err := candidate.JobPrefix("job-4")
	require.NoError(t, err)
	require.Equal(t, "candidates/job-4/", p)
	other := mustKey(t, "job-42", 1, "a", "json").String()
	require.False(t, strings.HasPrefix(other, p), "job-4's prefix must not cover job-42")
}

func TestKeyValidation(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", candidate.MaxIDLength)
	tests := []struct {
		name       string
		job        string
		generation int64
		attempt    string
		ext        string
		wantErr    string // substring of the message; "" for a valid key
	}{
		{"valid", "job-42", 1, "attempt-1", "json", ""},
		{"longest ids", long, 1, long, strings.Repeat("z", candidate.MaxExtLength), ""},
		{"underscore and digits", "JOB_0", 7, "_-_", "csv2", ""},
		{"job traversal", "../x", 1, "a", "json", `job id "../x" has byte '.' at offset 0`},
		{"job dot-dot", "..", 1, "a", "json", "job id"},
		{"job slash", "a/b", 1, "a", "json", `job id "a/b" has byte '/' at offset 1`},
		{"job empty", "", 1, "a", "json", "job id \"\" is empty"},
		{"job 129 bytes", long + "a", 1, "a", "json", "is 129 bytes long, more than 128"},
		{"job unicode", "jöb", 1, "a", "json", "job id \"jöb\" has byte"},
		{"job space", "job 42", 1, "a", "json", "job id"},
		{"job backslash", `a\b`, 1, "a", "json", "job id"},
		{"job NUL", "a\x00", 1, "a", "json", "job id"},
		{"attempt traversal", "job-42", 1, "../../etc/passwd", "json", "attempt id"},
		{"attempt slash", "job-42", 1, "a/b", "json", "attempt id"},
		{"attempt dot", "job-42", 1, "a.b", "json", "attempt id"},
		{"attempt empty", "job-42", 1, "", "json", "attempt id \"\" is empty"},
		{"attempt 129 bytes", "job-42", 1, long + "b", "json", "attempt id"},
		{"attempt unicode", "job-42", 1, "versuch-ü", "json", "attempt id"},
		{"generation zero", "job-42", 0, "a", "json", "generation 0 is outside 1..9999999999"},
		{"generation negative", "job-42", -1, "a", "json", "generation -1"},
		{"generation too large", "job-42", candidate.MaxGeneration + 1, "a", "json", "generation 10000000000"},
		{"ext empty", "job-42", 1, "a", "", "extension \"\" is empty"},
		{"ext upper case", "job-42", 1, "a", "JSON", "extension"},
		{"ext dot", "job-42", 1, "a", "tar.gz", "extension"},
		{"ext slash", "job-42", 1, "a", "x/y", "extension"},
		{"ext 17 bytes", "job-42", 1, "a", strings.Repeat("z", 17), "is 17 bytes long, more than 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k, err := candidate.NewKey(tt.job, tt.generation, tt.attempt, tt.ext)
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, candidate.Key{JobID: tt.job, Generation: tt.generation, AttemptID: tt.attempt, Ext: tt.ext}, k)
				return
			}
			require.ErrorIs(t, err, candidate.ErrInvalidKey)
			require.ErrorContains(t, err, tt.wantErr)
			require.Zero(t, k)
		})
	}
}

func TestJobPrefixRejectsInvalidJobID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", "..", "a/b", "../x", strings.Repeat("j", 129), "ジョブ"} {
		_, err := candidate.JobPrefix(id)
		require.ErrorIs(t, err, candidate.ErrInvalidKey, "job id %q", id)
	}
}

func TestParseKeyRejectsForeignKeys(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"",
		"candidates/",
		"candidates/job-42/",
		"results/job-42/g0000000001/a.json",
		"Candidates/job-42/g0000000001/a.json",
		"/candidates/job-42/g0000000001/a.json",
		"candidates/job-42/g0000000001/a",                   // no extension
		"candidates/job-42/g0000000001/a.tar.gz",            // two dots
		"candidates/job-42/g0000000001/.json",               // empty attempt
		"candidates/job-42/g0000000001/a.",                  // empty extension
		"candidates/job-42/g1/a.json",                       // unpadded generation
		"candidates/job-42/g00000000001/a.json",             // 11 digits
		"candidates/job-42/g0000000000/a.json",              // generation 0
		"candidates/job-42/g+000000001/a.json",              // sign
		"candidates/job-42/0000000001/a.json",               // no g
		"candidates/job-42/g0000000001/sub/a.json",          // extra segment
		"candidates/../g0000000001/a.json",                  // traversal as job id
		"candidates/job-42/g0000000001/../a.json",           // traversal as file
		"candidates//g0000000001/a.json",                    // empty job id
		"candidates/job-42/g0000000001/a.json/",             // trailing slash
		"candidates/jöb/g0000000001/a.json",                 // unicode
		"candidates/job-42/g000000000١/a.json",              // non-ASCII digit
		"candidates/job-42/g0000000001/a.JSON",              // upper-case extension
		"candidates/job-42/g0000000001/a b.json",            // space
		"candidates/job-42/notes.txt",                       // not a candidate at all
		"candidates/job-42/g0000000001/a.json\n",            // trailing newline
		"candidates/job-42/g0000000001/a.json?x=1",          // query
		"candidates/job-42/g0000000001/a.json%2F..",         // escaped slash
		"candidates/job-42/g0000000001\\a.json",             // backslash
		"candidates/job-42/g0000000001/a.abcdefghijklmnopq", // extension too long
	} {
		_, err := candidate.ParseKey(s)
		require.ErrorIs(t, err, candidate.ErrInvalidKey, "key %q", s)
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	k, err := candidate.ParseKey("candidates/job-42/g0000000002/attempt-b.json")
	require.NoError(t, err)
	require.Equal(t, candidate.Key{JobID: "job-42", Generation: 2, AttemptID: "attempt-b", Ext: "json"}, k)
}

func validKey() *rapid.Generator[candidate.Key] {
	return rapid.Custom(func(t *rapid.T) candidate.Key {
		return candidate.Key{
			JobID:      rapid.StringMatching(`[A-Za-z0-9_-]{1,128}`).Draw(t, "job"),
			Generation: rapid.Int64Range(1, candidate.MaxGeneration).Draw(t, "generation"),
			AttemptID:  rapid.StringMatching(`[A-Za-z0-9_-]{1,128}`).Draw(t, "attempt"),
			Ext:        rapid.StringMatching(`[a-z0-9]{1,16}`).Draw(t, "ext"),
		}
	})
}

// Building a key and parsing it back is the identity.
func TestPropertyBuildParseRoundTrip(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		k := validKey().Draw(t, "key")
		built, err := candidate.NewKey(k.JobID, k.Generation, k.AttemptID, k.Ext)
		if err != nil {
			t.Fatalf("NewKey(%+v): %v", k, err)
		}
		parsed, err := candidate.ParseKey(built.String())
		if err != nil {
			t.Fatalf("ParseKey(%q): %v", built.String(), err)
		}
		if parsed != k {
			t.Fatalf("ParseKey(%q) = %+v, want %+v", built.String(), parsed, k)
		}
	})
}

// Whatever string ParseKey accepts, it accepts as the one spelling that
// String builds, so two different strings never name one candidate, and
// every key it accepts stays under its job's prefix. The strings are valid
// keys with a few random edits, so that both outcomes are common.
func TestPropertyParseAcceptsOnlyCanonicalKeys(t *testing.T) {
	t.Parallel()
	chars := []byte("/.g0190aZ_-+ \\%\x00")
	chars = append(chars, "ü"...)
	rapid.Check(t, func(t *rapid.T) {
		s := []byte(validKey().Draw(t, "key").String())
		edits := rapid.IntRange(0, 3).Draw(t, "edits")
		for range edits {
			i := rapid.IntRange(0, len(s)-1).Draw(t, "at")
			c := rapid.SampledFrom(chars).Draw(t, "char")
			switch rapid.IntRange(0, 2).Draw(t, "edit") {
			case 0: // replace
				s[i] = c
			case 1: // insert
				s = append(s[:i], append([]byte{c}, s[i:]...)...)
			case 2: // delete
				s = append(s[:i], s[i+1:]...)
			}
		}
		k, err := candidate.ParseKey(string(s))
		if edits == 0 && err != nil {
			t.Fatalf("ParseKey(%q) rejected a built key: %v", s, err)
		}
		if err != nil {
			return
		}
		if k.String() != string(s) {
			t.Fatalf("ParseKey(%q) = %+v, which builds %q", s, k, k.String())
		}
		prefix, err := candidate.JobPrefix(k.JobID)
		rest, under := strings.CutPrefix(string(s), prefix)
		if err != nil || !under || strings.Contains(rest, "..") {
			t.Fatalf("ParseKey(%q) accepted a key outside its job prefix %q", s, prefix)
		}
	})
}
