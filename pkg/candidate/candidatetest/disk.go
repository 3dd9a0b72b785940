package candidatetest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/fifoworker/fifoworker/pkg/candidate"
)

// Disk is a candidate.Spool of a fixed size, in memory: a Lambda
// function's /tmp of a given ephemeral storage, for tests that fill it
// (candidate.Config.Spool). Every file it makes shares the size. A write that
// does not fit writes what does and fails with syscall.ENOSPC, as a full
// file system answers; closing a file frees its bytes. It is safe for
// concurrent use.
type Disk struct {
	mu    sync.Mutex
	size  int64
	used  int64
	peak  int64
	full  int // writes refused for space
	files int // open files
}

var _ candidate.Spool = (*Disk)(nil)

// ErrInvalidConfig is wrapped by NewDisk's error for a configuration that
// cannot work; the message names the field.
var ErrInvalidConfig = errors.New("candidatetest: invalid configuration")

// DiskConfig configures a Disk.
type DiskConfig struct {
	// Size is the disk's capacity in bytes. Required: at least 1.
	Size int64
}

// Validate reports a field that cannot work, wrapping ErrInvalidConfig.
func (c DiskConfig) Validate() error {
	if c.Size < 1 {
		return fmt.Errorf("%w: Size %d is not a positive number of bytes", ErrInvalidConfig, c.Size)
	}
	return nil
}

// NewDisk returns an empty disk of cfg.Size bytes, or an error wrapping
// ErrInvalidConfig.
func NewDisk(cfg DiskConfig) (*Disk, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Disk{size: cfg.Size}, nil
}

// Create implements candidate.Spool.
func (d *Disk) Create() (candidate.SpoolFile, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.files++
	return &diskFile{d: d}, nil
}

// DiskStats is what a Disk holds and has refused.
type DiskStats struct {
	Used  int64 // bytes the open files hold
	Peak  int64 // the most bytes the files ever held at once
	Full  int   // writes refused for space (ENOSPC)
	Files int   // open files
}

// Stats returns the disk's figures now.
func (d *Disk) Stats() DiskStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return DiskStats{Used: d.used, Peak: d.peak, Full: d.full, Files: d.files}
}

// diskFile is one file of a Disk.
type diskFile struct {
	d      *Disk
	data   []byte // guarded by d.mu
	closed bool   // guarded by d.mu
}

func (f *diskFile) Write(p []byte) (int, error) {
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if f.closed {
		return 0, os.ErrClosed
	}
	n := int64(len(p))
	var err error
	if room := d.size - d.used; n > room {
		n, err = room, &os.PathError{Op: "write", Path: "candidatetest.Disk", Err: syscall.ENOSPC}
		d.full++
	}
	f.data = append(f.data, p[:n]...)
	d.used += n
	d.peak = max(d.peak, d.used)
	return int(n), err
}

func (f *diskFile) ReadAt(p []byte, off int64) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	switch {
	case f.closed:
		return 0, os.ErrClosed
	case off < 0:
		return 0, fmt.Errorf("candidatetest: read at %d: negative offset", off)
	case off >= int64(len(f.data)):
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *diskFile) Close() error {
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	f.closed = true
	d.used -= int64(len(f.data))
	d.files--
	f.data = nil
	return nil
}
