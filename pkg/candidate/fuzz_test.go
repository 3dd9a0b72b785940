package candidate_test

import (
	"testing"

	"github.com/fifoworker/fifoworker/pkg/candidate"
)

// FuzzParseKey: ParseKey accepts exactly the keys Key.String builds, so a
// key that parses is valid and prints back to itself; nothing panics.
func FuzzParseKey(f *testing.F) {
	f.Add("candidates/job-42/g0000000002/attempt-b.csv")
	f.Add("candidates/job-42/g0000000002/../x.csv")
	f.Add("candidates//g0000000001/a.json")
	f.Add("candidates/job-4/g00000000001/a.csv")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := candidate.ParseKey(s)
		if err != nil {
			return
		}
		if err := k.Validate(); err != nil {
			t.Fatalf("ParseKey(%q) gave an invalid key: %v", s, err)
		}
		if k.String() != s {
			t.Fatalf("ParseKey(%q).String() = %q", s, k.String())
		}
	})
}
