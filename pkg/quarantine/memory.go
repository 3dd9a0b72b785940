package quarantine

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// MemoryStore is a Store in memory, for tests and the simulation. It is
// held to the same conformance suite as DynamoStore.
type MemoryStore struct {
	mu    sync.Mutex
	holds map[holdKey]HoldRecord
	items map[holdKey]map[string]Parked // by sequence key
}

type holdKey struct{ queue, group string }

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{holds: map[holdKey]HoldRecord{}, items: map[holdKey]map[string]Parked{}}
}

// Read implements Store.
func (m *MemoryStore) Read(ctx context.Context, queue string, groups []string, keys []ItemKey) (map[string]HoldRecord, map[ItemKey]Parked, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	holds := map[string]HoldRecord{}
	for _, g := range groups {
		if h, ok := m.holds[holdKey{queue, g}]; ok {
			holds[g] = h
		}
	}
	items := map[ItemKey]Parked{}
	for _, k := range keys {
		if p, ok := m.items[holdKey{queue, k.Group}][k.Sequence]; ok {
			items[k] = clone(p)
		}
	}
	return holds, items, nil
}

// Park implements Store.
func (m *MemoryStore) Park(ctx context.Context, queue, group string, items []Parked, hold bool, cause string, now time.Time) (HoldRecord, error) {
	// The memory store's errors go unwrapped: begin's fail is not used.
	c := parkCall{queue: queue, group: group, items: items, hold: hold, cause: cause, now: now}
	if _, err := c.begin(ctx, nil); err != nil {
		return HoldRecord{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := holdKey{queue, group}
	if m.items[k] == nil {
		m.items[k] = map[string]Parked{}
	}
	h, ok := m.holds[k]
	h, fresh, write, err := c.apply(h, ok, func(seq string) bool {
		_, ok := m.items[k][seq]
		return ok
	})
	if err != nil || !write {
		return h, err
	}
	for _, p := range fresh {
		m.items[k][p.Sequence] = clone(p)
	}
	m.holds[k] = h
	return h, nil
}

// Done implements Store.
func (m *MemoryStore) Done(ctx context.Context, queue, group, seq string, epoch int64, now time.Time) (HoldRecord, error) {
	if err := ctx.Err(); err != nil {
		return HoldRecord{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := holdKey{queue, group}
	h, ok := m.holds[k]
	switch {
	case !ok || h.State == StateReleased:
		return HoldRecord{}, ErrNoHold
	}
	if err := doneConflict(h, seq, epoch); err != nil {
		return HoldRecord{}, err
	}
	return m.unpark(k, h, seq, StatusDone, now)
}

// Discard implements Store.
func (m *MemoryStore) Discard(ctx context.Context, queue, group, seq string, now time.Time) (HoldRecord, error) {
	if err := ctx.Err(); err != nil {
		return HoldRecord{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := holdKey{queue, group}
	h, ok := m.holds[k]
	if !ok || h.State == StateReleased {
		return HoldRecord{}, ErrNoHold
	}
	return m.unpark(k, h, seq, StatusDiscarded, now)
}

func (m *MemoryStore) unpark(k holdKey, h HoldRecord, seq string, to Status, now time.Time) (HoldRecord, error) {
	p, ok := m.items[k][seq]
	if !ok || p.Status != StatusParked {
		return HoldRecord{}, ErrNotParked
	}
	next := ""
	if needsNext(h, seq) {
		next = m.firstParked(k, seq)
	}
	p.Status, p.UpdatedAt = to, now
	m.items[k][seq] = p
	h = unparkedHold(h, seq, next, now)
	m.holds[k] = h
	return h, nil
}

// firstParked returns the oldest message of k parked after sequence key
// after, or "".
func (m *MemoryStore) firstParked(k holdKey, after string) string {
	for _, seq := range slices.Sorted(maps.Keys(m.items[k])) {
		if seq > after && m.items[k][seq].Status == StatusParked {
			return seq
		}
	}
	return ""
}

// BeginRedrive implements Store.
func (m *MemoryStore) BeginRedrive(ctx context.Context, queue, group string, now time.Time) (HoldRecord, error) {
	if err := ctx.Err(); err != nil {
		return HoldRecord{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := holdKey{queue, group}
	h, ok := m.holds[k]
	if !ok || h.State == StateReleased {
		return HoldRecord{}, ErrNoHold
	}
	oldest := ""
	if needsOldest(h) {
		oldest = m.firstParked(k, "")
	}
	h = redrivenHold(h, oldest, now)
	m.holds[k] = h
	return h, nil
}

// Failed implements Store. It reads what it counts: f.Seen and f.SeenHeld
// change nothing.
func (m *MemoryStore) Failed(ctx context.Context, queue, group string, f Failure, now time.Time) (Attempts, error) {
	if err := ctx.Err(); err != nil {
		return Attempts{}, err
	}
	if err := checkFailure(queue, group, f); err != nil {
		return Attempts{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := holdKey{queue, group}
	h, ok := m.holds[k]
	h = failedHold(h, ok, queue, group, f, now)
	m.holds[k] = h
	return h.Attempts, nil
}

// Hold implements Store.
func (m *MemoryStore) Hold(ctx context.Context, queue, group string) (HoldRecord, error) {
	if err := ctx.Err(); err != nil {
		return HoldRecord{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.holds[holdKey{queue, group}]
	if !ok {
		return HoldRecord{}, ErrNoHold
	}
	return h, nil
}

// Messages implements Store.
func (m *MemoryStore) Messages(ctx context.Context, queue, group string, status Status, after string, limit int) ([]Parked, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	items := m.items[holdKey{queue, group}]
	var out []Parked
	for _, seq := range slices.Sorted(maps.Keys(items)) {
		p := items[seq]
		if seq <= after || (status != "" && p.Status != status) {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		out = append(out, clone(p))
	}
	return out, nil
}

// Holds implements Store.
func (m *MemoryStore) Holds(ctx context.Context, queue string) ([]HoldRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []HoldRecord
	for k, h := range m.holds {
		if k.queue == queue && h.State != StateReleased {
			out = append(out, h)
		}
	}
	sortHolds(out)
	return out, nil
}

func clone(p Parked) Parked {
	p.Attributes = maps.Clone(p.Attributes)
	for name, a := range p.Attributes {
		a.BinaryValue = slices.Clone(a.BinaryValue)
		p.Attributes[name] = a
	}
	if p.Kafka != nil {
		k := KafkaRecord{Key: slices.Clone(p.Kafka.Key), Value: slices.Clone(p.Kafka.Value), Headers: slices.Clone(p.Kafka.Headers)}
		for i := range k.Headers {
			k.Headers[i].Value = slices.Clone(k.Headers[i].Value)
		}
		p.Kafka = &k
	}
	return p
}
