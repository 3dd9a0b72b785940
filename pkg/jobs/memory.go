package jobs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// MemoryStore is a Store in memory, for fast tests. It makes the same
// decisions as DynamoStore (both call the same state machine) and passes the
// same conformance suite; it does not expire items.
type MemoryStore struct {
	cfg     config
	mu      sync.Mutex
	jobs    map[string]Job
	markers map[string]intentMarker
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store with the settings of cfg (its zero
// value is the defaults), or an error wrapping ErrInvalidConfig.
func NewMemoryStore(cfg Config) (*MemoryStore, error) {
	c, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	return &MemoryStore{cfg: c, jobs: map[string]Job{}, markers: map[string]intentMarker{}}, nil
}

// Create implements Store.
func (s *MemoryStore) Create(ctx context.Context, req CreateRequest) (CreateResult, error) {
	if err := ctx.Err(); err != nil {
		return CreateResult{}, createError(&req, err)
	}
	if err := req.validate(); err != nil {
		return CreateResult{}, createError(&req, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var dangling *intentMarker
	if m, ok := s.markers[IntentKey(req.Tenant, req.IntentID)]; ok {
		res, free, err := resolveCreate(&req, &m, s.lookup(m.JobID))
		if !free {
			return cloneResult(res), createError(&req, err)
		}
		dangling = &m
	}
	job, marker := newJob(&req, dangling, s.cfg.now(), &s.cfg)
	job = normalize(job)
	if existing := s.lookup(job.ID); existing != nil {
		res, _, err := resolveCreate(&req, nil, existing)
		return cloneResult(res), createError(&req, err)
	}
	s.jobs[job.ID] = job
	s.markers[marker.Key] = marker
	return CreateResult{Job: clone(job)}, nil
}

func (s *MemoryStore) lookup(id string) *Job {
	if j, ok := s.jobs[id]; ok {
		return &j
	}
	return nil
}

// Claim implements Store.
func (s *MemoryStore) Claim(ctx context.Context, req ClaimRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Renew implements Store.
func (s *MemoryStore) Renew(ctx context.Context, req RenewRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Accept implements Store.
func (s *MemoryStore) Accept(ctx context.Context, req AcceptRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Fail implements Store.
func (s *MemoryStore) Fail(ctx context.Context, req FailRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Cancel implements Store.
func (s *MemoryStore) Cancel(ctx context.Context, req CancelRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Nudge implements Store.
func (s *MemoryStore) Nudge(ctx context.Context, req NudgeRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Live implements Lister. The memory store has no index: it lists what the
// live index holds, every job that is not final.
func (s *MemoryStore) Live(ctx context.Context, updatedBefore time.Time, limit int) ([]string, error) {
	return liveIDs(s.LiveAfter(ctx, LivePosition{}, updatedBefore, limit))
}

// LiveAfter implements LivePager.
func (s *MemoryStore) LiveAfter(ctx context.Context, after LivePosition, updatedBefore time.Time, limit int) ([]LivePosition, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("jobs: live: %w", err)
	}
	if err := validateLimit(limit); err != nil {
		return nil, err
	}
	cutoff := updatedBefore.UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []LivePosition
	for id, j := range s.jobs {
		if !j.Status.Final() && j.UpdatedAt.UnixMilli() < cutoff {
			found = append(found, LivePosition{ID: id, UpdatedAt: j.UpdatedAt.UnixMilli()})
		}
	}
	return oldest(found, after, limit), nil
}

// GetMany implements BatchGetter.
func (s *MemoryStore) GetMany(ctx context.Context, ids []string) (map[string]Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("jobs: get many: %w", err)
	}
	unique, err := uniqueIDs(ids)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Job, len(unique))
	for _, id := range unique {
		if j, ok := s.jobs[id]; ok {
			out[id] = clone(j)
		}
	}
	return out, nil
}

// Get implements Store.
func (s *MemoryStore) Get(ctx context.Context, id string) (Job, error) {
	if err := ctx.Err(); err != nil {
		return Job{}, fmt.Errorf("jobs: get %s: %w", id, err)
	}
	if err := ValidateID(id); err != nil {
		return Job{}, fmt.Errorf("jobs: get: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return Job{}, fmt.Errorf("jobs: get %s: %w", id, ErrNotFound)
	}
	return clone(j), nil
}

func (s *MemoryStore) transition(ctx context.Context, req request) (Job, error) {
	if err := ctx.Err(); err != nil {
		return Job{}, transitionError(req, err)
	}
	now := s.cfg.now()
	if err := req.validate(now, &s.cfg); err != nil {
		return Job{}, transitionError(req, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.lookup(req.jobID())
	st, err := decide(req, cur, now, &s.cfg)
	if err != nil {
		return Job{}, transitionError(req, err)
	}
	if st.done {
		return clone(*cur), transitionError(req, st.after)
	}
	if !st.guard.holds(cur) {
		// decide only plans writes whose guard the item it saw satisfies.
		panic(fmt.Sprintf("jobs: %s: planned a write whose guard fails", req.describe()))
	}
	next := normalize(st.patch.apply(*cur))
	s.jobs[next.ID] = next
	return clone(next), transitionError(req, st.after)
}

// normalize gives j the form it has after a round trip through the table:
// stored precision, absent empty maps.
func normalize(j Job) Job {
	n, err := FromItem(jobItem(&j, LiveShards))
	if err != nil {
		panic(err)
	}
	return n
}

func clone(j Job) Job {
	j.Spec = maps.Clone(j.Spec)
	j.Outbox.Payload = maps.Clone(j.Outbox.Payload)
	j.History = slices.Clone(j.History)
	return j
}

func cloneResult(r CreateResult) CreateResult {
	r.Job = clone(r.Job)
	return r
}

// transitionError wraps err with the operation: "jobs: accept job-42 g2: …".
func transitionError(req request, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("jobs: %s: %w", req.describe(), err)
}

func createError(req *CreateRequest, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("jobs: create intent %s of %s: %w", req.IntentID, req.Tenant, err)
}
