package projection

import (
	"context"
	"fmt"
	"sync"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// MemoryStore is a Store in memory, for fast tests and the examples. It
// makes its decisions with the same functions as DynamoStore and passes the
// same conformance suite.
type MemoryStore struct {
	mu      sync.Mutex
	views   map[string]View
	totals  map[string]Totals
	cursors map[cursorKey]Cursor
}

type cursorKey struct{ tenant, jobID string }

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{views: map[string]View{}, totals: map[string]Totals{}, cursors: map[cursorKey]Cursor{}}
}

// Apply implements Store.
func (s *MemoryStore) Apply(ctx context.Context, v View, delta int64) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, applyError(&v, err)
	}
	if err := v.validate(); err != nil {
		return Result{}, applyError(&v, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res := Result{ViewUpdated: s.putView(&v, false)}
	key := cursorKey{v.Tenant, v.JobID}
	cur := s.cursors[key]
	out, err := classify(v.JobID, cur.Version, v.Version)
	if err != nil {
		return res, err
	}
	res.Outcome, res.Cursor = out, cur.Version
	if out != Applied {
		return res, nil
	}
	s.cursors[key] = cursorOf(&v)
	t := s.totals[v.Tenant]
	t.Tenant = v.Tenant
	t.Processed += delta
	t.Completed += completedDelta("", v.Status)
	s.totals[v.Tenant] = t
	res.Cursor = v.Version
	return res, nil
}

// putView stores v if the view holds an older version, or the same one when
// orEqual is set (a recovery rewrites the snapshot it read).
func (s *MemoryStore) putView(v *View, orEqual bool) bool {
	held, ok := s.views[v.JobID]
	if !viewNewer(held.Version, ok, v.Version) && (!orEqual || held.Version != v.Version) {
		return false
	}
	s.views[v.JobID] = *v
	return true
}

// Recover implements Store.
func (s *MemoryStore) Recover(ctx context.Context, snap View) (Recovery, error) {
	if err := ctx.Err(); err != nil {
		return Recovery{}, recoverError(&snap, err)
	}
	if err := snap.validate(); err != nil {
		return Recovery{}, recoverError(&snap, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := cursorKey{snap.Tenant, snap.JobID}
	r := planRecovery(s.cursors[key], &snap)
	r.ViewUpdated = s.putView(&snap, r.Moved())
	if !r.Moved() {
		return r, nil
	}
	s.cursors[key] = r.To
	t := s.totals[snap.Tenant]
	t.Tenant = snap.Tenant
	t.Processed += r.Processed
	t.Completed += r.Completed
	s.totals[snap.Tenant] = t
	return r, nil
}

// View implements Store.
func (s *MemoryStore) View(ctx context.Context, jobID string) (View, error) {
	if err := ctx.Err(); err != nil {
		return View{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.views[jobID]
	if !ok {
		return View{}, fmt.Errorf("projection: view %s: %w", jobID, ErrNotFound)
	}
	return v, nil
}

// Totals implements Store.
func (s *MemoryStore) Totals(ctx context.Context, tenant string) (Totals, error) {
	if err := ctx.Err(); err != nil {
		return Totals{}, err
	}
	if err := validateTenant(tenant); err != nil {
		return Totals{}, fmt.Errorf("projection: totals: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.totals[tenant]
	t.Tenant = tenant
	return t, nil
}

// Cursor implements Store.
func (s *MemoryStore) Cursor(ctx context.Context, tenant, jobID string) (Cursor, error) {
	if err := ctx.Err(); err != nil {
		return Cursor{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursors[cursorKey{tenant, jobID}], nil
}

func applyError(v *View, err error) error {
	return fmt.Errorf("projection: apply %s: %w", jobs.OutboxID(v.JobID, v.Version), err)
}

func recoverError(v *View, err error) error {
	return fmt.Errorf("projection: recover %s to v%d: %w", v.JobID, v.Version, err)
}
