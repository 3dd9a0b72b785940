package candidate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// SpoolFile is one candidate's spool: written in order while the task
// produces the content, read back at offsets for the upload, and closed
// once, which frees its space.
type SpoolFile interface {
	io.Writer
	io.ReaderAt
	io.Closer
}

// Spool makes the spool files of a Store's writers. The default spools to
// a directory (Config.SpoolDir); a test injects one of a fixed size
// (candidatetest.Disk) to fill it.
type Spool interface {
	Create() (SpoolFile, error)
}

// dirSpool makes spool files in a directory ("" is os.TempDir()).
type dirSpool struct{ dir string }

func (d dirSpool) Create() (SpoolFile, error) {
	f, err := os.CreateTemp(d.dir, "candidate-*.spool")
	if err != nil {
		return nil, err
	}
	// Unlink at once where the system allows it: the space is then freed
	// when the file is closed, even by the finalizer of a file that was
	// never closed, and no crash can leave a spool file in /tmp for the
	// next invocation of a warm Lambda environment.
	name := f.Name()
	if os.Remove(name) == nil {
		name = ""
	}
	return &dirFile{File: f, name: name}, nil
}

// dirFile is a spool file in a directory; name is its path while it still
// has one to remove.
type dirFile struct {
	*os.File
	name string
}

func (f *dirFile) Close() error {
	err := f.File.Close()
	if f.name != "" {
		if rmErr := os.Remove(f.name); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
		f.name = ""
	}
	return err
}

// Reservation is room in the spool budget for one candidate of up to the
// store's max size, taken before the work that will write it (Reserve). A
// Writer made from it (Create) takes it over and gives the room back when
// it is closed; until then Release gives it back. A Reservation is not
// safe for concurrent use.
type Reservation struct {
	s      *Store
	held   bool // holds a slot of the budget
	taken  bool // a Writer took it over
	waited bool
}

// Reserve takes room for one candidate of up to the store's max size
// (Config.MaxSize) in the spool budget (Config.SpoolBudget), waiting, in the
// order of arrival, while other reservations hold all of it. Without a
// budget it never waits. When ctx ends first it takes nothing and returns
// an error wrapping ErrSpoolBusy and ctx's error.
//
// Every reservation is of the whole max size, taken at once, and a Writer
// made from it never asks for more (a write past the max size is
// ErrTooLarge), so nobody waits for room while holding some: see the
// package documentation for why that cannot deadlock.
func (s *Store) Reserve(ctx context.Context) (*Reservation, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("candidate: reserve spool room: %w", err)
	}
	r := &Reservation{s: s}
	if s.slots == nil {
		return r, nil
	}
	select {
	case s.slots <- struct{}{}:
	default:
		r.waited = true
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("candidate: reserve spool room for %d bytes: %w: %w", s.cfg.MaxSize, ErrSpoolBusy, ctx.Err())
		}
	}
	r.held = true
	return r, nil
}

// Waited reports whether Reserve had to wait for another reservation to
// give its room back.
func (r *Reservation) Waited() bool { return r.waited }

// Create starts a candidate at key in the reserved room; the Writer takes
// the reservation over. A reservation makes one Writer: a second Create, or
// one after Release, fails. When Create fails the reservation stays with
// the caller.
func (r *Reservation) Create(ctx context.Context, key Key) (*Writer, error) {
	if r.taken || (r.s.slots != nil && !r.held) {
		return nil, fmt.Errorf("candidate: create %s: the reservation was used or released: %w", key, os.ErrClosed)
	}
	w, err := r.s.create(ctx, key)
	if err != nil {
		return nil, err
	}
	r.taken, w.room = true, r
	return w, nil
}

// Release gives the room back, unless a Writer took it over (its Close
// does). It may be called more than once, so it can be deferred.
func (r *Reservation) Release() {
	if !r.taken {
		r.free()
	}
}

func (r *Reservation) free() {
	if r.held {
		r.held = false
		<-r.s.slots
	}
}
