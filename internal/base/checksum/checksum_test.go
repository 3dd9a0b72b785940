package checksum

import (
	"strings"
	"testing"
)

func TestIsSHA256Hex(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		SHA256Hex([]byte("job-42")): true,
		strings.Repeat("0", 64):     true,
		strings.Repeat("f", 64):     true,
		strings.Repeat("F", 64):     false, // upper case is not how we write it
		strings.Repeat("a", 63):     false,
		strings.Repeat("a", 65):     false,
		strings.Repeat("g", 64):     false,
		"":                          false,
	} {
		if got := IsSHA256Hex(s); got != want {
			t.Errorf("IsSHA256Hex(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestSHA256HexOfTheEmptyInput(t *testing.T) {
	t.Parallel()
	const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if got := SHA256Hex(nil); got != empty {
		t.Fatalf("SHA256Hex(nil) = %s, want %s", got, empty)
	}
}
