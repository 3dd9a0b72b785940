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
	held, ok := s.views[v.JobID]
	key := cursorKey{v.Tenant, v.JobID}
	if !adds(&v, delta) {
		if ok && pastFinal(&held, &v) {
			return Result{}, skippedPastFinal(&v, delta, s.cursors[key])
		}
		res := Result{Outcome: Skipped, ViewUpdated: viewNewer(held.Version, ok, v.Version)}
		if res.ViewUpdated {
			s.views[v.JobID] = v
		}
		return res, nil
	}
	res := Result{ViewUpdated: viewNewer(held.Version, ok, v.Version)}
	if res.ViewUpdated {
		s.views[v.JobID] = v
	}
	cur := s.cursors[key]
	out, err := judge(cur, &v, delta)
	if err != nil {
		return res, err
	}
	res.Outcome, res.Cursor = out, cur.Version
	if out != Applied {
		return res, nil
	}
	s.cursors[key] = cursorOf(&v)
	s.add(v.Tenant, delta, completedOf(v.Status))
	res.Cursor = v.Version
	return res, nil
}

// add adds to the tenant's counters.
func (s *MemoryStore) add(tenant string, processed, completed int64) {
	t := s.totals[tenant]
	t.Tenant = tenant
	t.Processed += processed
	t.Completed += completed
	s.totals[tenant] = t
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
	held, ok := s.views[snap.JobID]
	if r.ViewUpdated = viewTakes(&held, ok, &snap, r.Moved()); r.ViewUpdated {
		s.views[snap.JobID] = snap
	}
	if r.Moved() {
		s.cursors[key] = r.To
		s.add(snap.Tenant, r.Processed, r.Completed)
	}
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
