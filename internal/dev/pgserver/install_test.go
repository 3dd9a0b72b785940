package pgserver

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBinariesUnderAClosedDirectoryAreCopiedWhereOthersReachThem(t *testing.T) {
	closed := t.TempDir()
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(closed, "native")
	for _, p := range []string{"bin", "lib"} {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "postgres"), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("libpq.so.5.18", filepath.Join(root, "lib", "libpq.so.5")); err != nil {
		t.Fatal(err)
	}
	open := filepath.Dir(testDataDir(t)) // 0755 in the system's temporary directory
	got, err := reachableCopyIn(root, open)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(got) != open || !searchableByOthers(got) {
		t.Fatalf("reachableCopyIn = %s, want a directory of %s that others can search", got, open)
	}
	fi, err := os.Stat(filepath.Join(got, "bin", "postgres"))
	if err != nil || fi.Mode().Perm()&0o005 != 0o005 {
		t.Fatalf("the copy's bin/postgres: %v, %v; want readable and executable by others", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(got, "lib", "libpq.so.5")); err != nil || target != "libpq.so.5.18" {
		t.Fatalf("the copy's lib/libpq.so.5: %q, %v; want the symlink kept", target, err)
	}
	again, err := reachableCopyIn(root, open)
	if err != nil || again != got {
		t.Fatalf("a second call = %s, %v; want the first copy %s", again, err, got)
	}
	if reached, err := reachableCopyIn(open, t.TempDir()); err != nil || reached != open {
		t.Fatalf("a tree others reach: %s, %v; want it as is", reached, err)
	}
}
