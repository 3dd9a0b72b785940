package candidatetest_test

import (
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/fifoworker/fifoworker/pkg/candidate/candidatetest"
)

// A Disk is full at exactly its size: the write that reaches it passes,
// the next byte is refused with ENOSPC after what fits was written, and a
// closed file's bytes are free again.
func TestDiskFillsAtItsSize(t *testing.T) {
	d, err := candidatetest.NewDisk(candidatetest.DiskConfig{Size: 10})
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.Create()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := a.Write([]byte("0123456789")); n != 10 || err != nil {
		t.Fatalf("a write of exactly the size: %d, %v", n, err)
	}
	b, _ := d.Create()
	n, err := b.Write([]byte("x"))
	if n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("one byte past the size: %d, %v; want 0 and ENOSPC", n, err)
	}
	if got, want := d.Stats(), (candidatetest.DiskStats{Used: 10, Peak: 10, Full: 1, Files: 2}); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	got := make([]byte, 4)
	if n, err := a.ReadAt(got, 6); n != 4 || string(got) != "6789" || (err != nil && !errors.Is(err, io.EOF)) {
		t.Fatalf("read back: %q, %v", got[:n], err)
	}
	if _, err := a.ReadAt(got, 8); !errors.Is(err, io.EOF) {
		t.Fatalf("a read past the end: %v, want io.EOF", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("a second close: %v", err)
	}
	if n, err := b.Write([]byte("0123456789ab")); n != 10 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("after the close, what fits is written: %d, %v", n, err)
	}
	if err := b.Close(); err != nil || d.Stats().Used != 0 || d.Stats().Files != 0 {
		t.Fatalf("all closed: %v, %+v", err, d.Stats())
	}
}

// NewDisk refuses a size below one byte, at its bound: a negative or zero
// size is an error wrapping ErrInvalidConfig that names Size, never a
// disk that refuses its first byte.
func TestNewDiskRefusesAnInvalidConfig(t *testing.T) {
	for _, size := range []int64{-1 << 40, -1, 0} {
		d, err := candidatetest.NewDisk(candidatetest.DiskConfig{Size: size})
		if !errors.Is(err, candidatetest.ErrInvalidConfig) || !strings.Contains(err.Error(), "Size") || d != nil {
			t.Fatalf("size %d: %v, %v; want an error wrapping ErrInvalidConfig naming Size, and no disk", size, d, err)
		}
	}
	if _, err := candidatetest.NewDisk(candidatetest.DiskConfig{Size: 1}); err != nil {
		t.Fatalf("size 1, the bound: %v", err)
	}
}
