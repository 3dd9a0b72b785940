package quarantine_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// costStore is a MemoryStore that counts the requests DynamoStore would
// make: a Read, and for Failed its conditional UpdateItems, one when the
// condition holds (the hold is as f.Seen and f.SeenHeld say, as
// DynamoStore's failedUpdate checks it), two when it is refused (the
// refusal returns the item, and the write is made again from it).
type costStore struct {
	*quarantine.MemoryStore
	mu    sync.Mutex
	calls map[string]int
}

func (s *costStore) count(op string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[op] += n
}

// take returns the requests counted since the last take.
func (s *costStore) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := maps.Clone(s.calls)
	clear(s.calls)
	return out
}

func (s *costStore) Read(ctx context.Context, queue string, groups []string, keys []quarantine.ItemKey) (map[string]quarantine.HoldRecord, map[quarantine.ItemKey]quarantine.Parked, error) {
	s.count("Read", 1)
	return s.MemoryStore.Read(ctx, queue, groups, keys)
}

func (s *costStore) Hold(ctx context.Context, queue, group string) (quarantine.HoldRecord, error) {
	s.count("Hold", 1)
	return s.MemoryStore.Hold(ctx, queue, group)
}

func (s *costStore) Park(ctx context.Context, queue, group string, items []quarantine.Parked, hold bool, cause string, now time.Time) (quarantine.HoldRecord, error) {
	s.count("Park", 1)
	return s.MemoryStore.Park(ctx, queue, group, items, hold, cause, now)
}

func (s *costStore) Failed(ctx context.Context, queue, group string, f quarantine.Failure, now time.Time) (quarantine.Attempts, error) {
	cur, err := s.MemoryStore.Hold(ctx, queue, group) // the condition's view, not a request
	if err != nil && !errors.Is(err, quarantine.ErrNoHold) {
		return quarantine.Attempts{}, err
	}
	held := err == nil && cur.State != quarantine.StateReleased
	counted := cur.Attempts.Sequence != f.Sequence // absent, or another record's
	if f.Seen.Sequence == f.Sequence && f.Seen.Failed > 0 {
		counted = cur.Attempts.Sequence == f.Sequence && cur.Attempts.Failed == f.Seen.Failed
	}
	if held == f.SeenHeld && counted {
		s.count("UpdateItem", 1)
	} else {
		s.count("UpdateItem", 2)
	}
	return s.MemoryStore.Failed(ctx, queue, group, f, now)
}

// A failed attempt costs one conditional write and no read of its own:
// the processor passes the hold its Check read, and the write's condition
// (the hold's state and the record's count) is what that read saw, for a
// key not held (its first failure and its second) and for a draining
// key's redriven copy that fails.
func TestKafkaAFailureCostsOneWriteAndNoRead(t *testing.T) {
	t.Parallel()
	store := &costStore{MemoryStore: quarantine.NewMemoryStore(), calls: map[string]int{}}
	q, err := quarantine.NewKafka(quarantine.KafkaConfig{Store: store, Topic: unitTopic})
	require.NoError(t, err)
	does := map[string]error{"flaky": errors.New("busy"), "poison": kafka.Permanent(errors.New("malformed"))}
	p, err := kafka.New(kafka.Config{Handler: func(_ context.Context, rec kafka.Record) error {
		return does[string(rec.Value)]
	}, Quarantine: q, QuarantineThreshold: 4})
	require.NoError(t, err)
	run := func(recs ...events.KafkaRecord) {
		t.Helper()
		_, err := p.Process(t.Context(), kevent(recs...))
		require.NoError(t, err)
	}
	flaky, other := krec(0, 1, "job-1", "flaky"), krec(0, 2, "job-2", "fine")

	run(flaky, other)
	require.Equal(t, map[string]int{"Read": 1, "UpdateItem": 1}, store.take(), "a first failure")
	run(flaky, other)
	require.Equal(t, map[string]int{"Read": 1, "UpdateItem": 1}, store.take(), "a second failure of the same record")

	run(krec(0, 5, "job-3", "poison"))
	store.take()
	h, err := store.BeginRedrive(t.Context(), unitTopic, "job-3", time.Now())
	require.NoError(t, err)
	parked, err := store.Messages(t.Context(), unitTopic, "job-3", quarantine.StatusParked, "", 0)
	require.NoError(t, err)
	require.Len(t, parked, 1)
	c := quarantine.Copy{Epoch: h.Epoch, Nonce: parked[0].Nonce, Sequence: parked[0].Sequence}
	cp := krec(0, 9, "job-3", "poison", quarantine.CopyHeader, c.Header())
	does["poison"] = errors.New("busy again") // the copy fails, transiently
	run(cp)
	require.Equal(t, map[string]int{"Read": 1, "UpdateItem": 1}, store.take(), "a draining key's copy that fails")
	hold, err := store.MemoryStore.Hold(t.Context(), unitTopic, "job-3")
	require.NoError(t, err)
	require.Equal(t, quarantine.StateDraining, hold.State)
	require.Equal(t, int64(1), hold.Attempts.Failed)
}
