//go:build integration

package quarantine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// TestPostgresStoreIsLinearizable: concurrent clients park, redrive,
// finish, discard, count failures and read two groups of a PostgresStore
// at once; porcupine then finds an order of the calls, each taking effect
// at one instant between its call and its return, in which the
// MemoryStore (the rules, applied one call at a time) answers every call
// as the PostgresStore did. The reads are Read, which returns a group's
// hold and its messages in one statement: a write that changed a message
// and its hold apart would show.
func TestPostgresStoreIsLinearizable(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	db.SetMaxOpenConns(8)
	require.NoError(t, MigratePostgres(t.Context(), db))
	store, err := NewPostgresStore(PostgresConfig{DB: db})
	require.NoError(t, err)
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			ops := recordLinHistory(t, store, "lin-"+strconv.FormatUint(seed, 10)+".fifo", seed)
			made := map[string]int{}
			for _, op := range ops {
				if op.Output.(linOutput).err == "" {
					made[op.Input.(linInput).op]++
				}
			}
			t.Logf("calls answered without error: %v", made)
			for _, op := range []string{"park", "done", "discard", "redrive", "failed", "read"} {
				require.Positive(t, made[op], "no %s succeeded: the history tests nothing of it", op)
			}
			res := porcupine.CheckOperations(linModel(), ops)
			require.True(t, res, "the history of %d calls is not linearizable (seed %d)", len(ops), seed)
		})
	}
}

var linStart = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)

// linInput is one call of the history.
type linInput struct {
	queue, group, op string
	seqs             []string // Park's items; Done, Discard, Failed: the first
	hold             bool
	epoch            int64
	now              time.Time
}

// linOutput is what a call answered: the hold it returned (or read),
// the attempts Failed returned, Read's messages, and its error's kind.
type linOutput struct {
	hold     HoldRecord
	found    bool // Read: the hold exists
	attempts Attempts
	messages map[ItemKey]Parked
	err      string
}

func linItem(seq string) Parked {
	return Parked{
		Sequence: seq, MessageID: "id-" + seq[36:], Body: "body " + seq[36:], BodyMD5: "md5", BodySize: 9,
		Attributes:   map[string]MessageAttribute{"trace": {DataType: "String", StringValue: seq[36:]}},
		ReceiveCount: 3, Cause: "failed",
	}
}

func errKind(err error) string {
	for _, e := range []error{ErrNoHold, ErrConflict, ErrNotParked} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if err != nil {
		return "unexpected: " + err.Error()
	}
	return ""
}

// apply runs in on s and returns what it answered.
func (in linInput) apply(ctx context.Context, s Store) linOutput {
	var out linOutput
	var err error
	switch in.op {
	case "park":
		items := make([]Parked, len(in.seqs))
		for i, seq := range in.seqs {
			items[i] = linItem(seq)
		}
		out.hold, err = s.Park(ctx, in.queue, in.group, items, in.hold, "cause "+in.group, in.now)
	case "done":
		out.hold, err = s.Done(ctx, in.queue, in.group, in.seqs[0], in.epoch, in.now)
	case "discard":
		out.hold, err = s.Discard(ctx, in.queue, in.group, in.seqs[0], in.now)
	case "redrive":
		out.hold, err = s.BeginRedrive(ctx, in.queue, in.group, in.now)
	case "failed":
		// Seen says nothing the result may depend on: a stale one is as good.
		out.attempts, err = s.Failed(ctx, in.queue, in.group, Failure{Sequence: in.seqs[0], Cause: "again", SeenHeld: in.hold}, in.now)
	case "read":
		keys := make([]ItemKey, len(in.seqs))
		for i, seq := range in.seqs {
			keys[i] = ItemKey{Group: in.group, Sequence: seq}
		}
		var holds map[string]HoldRecord
		holds, out.messages, err = s.Read(ctx, in.queue, []string{in.group}, keys)
		out.hold, out.found = holds[in.group]
	}
	out.err = errKind(err)
	return out
}

// recordLinHistory runs 4 clients of 30 calls each on two groups of
// queue and records each call's input, output, call and return.
func recordLinHistory(t *testing.T, store *PostgresStore, queue string, seed uint64) []porcupine.Operation {
	t.Helper()
	var (
		mu    sync.Mutex
		ops   []porcupine.Operation
		clock atomic.Int64 // the calls' order, and their times' milliseconds
		wg    sync.WaitGroup
	)
	seqs := make([]string, 8)
	for i := range seqs {
		seqs[i], _ = SeqKey(strconv.Itoa(i + 1))
	}
	for client := range 4 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(seed, uint64(client)))
			for range 30 {
				in := linInput{queue: queue, group: []string{"a", "b"}[rnd.IntN(2)], now: linStart.Add(time.Duration(clock.Add(1)) * time.Millisecond)}
				switch r := rnd.IntN(12); {
				case r < 4:
					from := rnd.IntN(len(seqs))
					in.op, in.seqs, in.hold = "park", seqs[from:min(from+1+rnd.IntN(3), len(seqs))], rnd.IntN(3) == 0
				case r < 6:
					// As a copy's done: of the message and epoch a read named,
					// an older epoch one time in four (a stale copy). With
					// one in two, a history of a seed had no done that
					// succeeded (1 clean-clone CI run of about 45).
					in.op, in.seqs, in.epoch = "done", seqs[rnd.IntN(len(seqs)):][:1], int64(1+rnd.IntN(3))
					if h, err := store.Hold(t.Context(), queue, in.group); err == nil && h.Next != "" {
						in.seqs, in.epoch = []string{h.Next}, h.Epoch-int64(rnd.IntN(4)/3)
					}
				case r < 7:
					// Of the message a read named next, as an operator's
					// discard does, half the time: a discard of a message
					// chosen blindly rarely finds its group held with it
					// parked, and a history with no discard that succeeded
					// tests nothing of it (2 runs of about 40 had none).
					in.op, in.seqs = "discard", seqs[rnd.IntN(len(seqs)):][:1]
					if h, err := store.Hold(t.Context(), queue, in.group); err == nil && h.Next != "" && rnd.IntN(2) == 0 {
						in.seqs = []string{h.Next}
					}
				case r < 9:
					// Twice as often as a discard: a done succeeds only on
					// a draining group, which only a redrive makes.
					in.op = "redrive"
				case r < 10:
					in.op, in.seqs, in.hold = "failed", seqs[rnd.IntN(len(seqs)):][:1], rnd.IntN(2) == 0
				default:
					in.op, in.seqs = "read", seqs
				}
				call := clock.Add(1)
				out := in.apply(t.Context(), store)
				ret := clock.Add(1)
				if len(out.err) > 11 && out.err[:11] == "unexpected:" {
					t.Errorf("%s of group %s: %s", in.op, in.group, out.err)
				}
				mu.Lock()
				ops = append(ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ops
}

// linModel is the MemoryStore as porcupine's sequential model, one
// partition per group.
func linModel() porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			for _, op := range history {
				g := op.Input.(linInput).group
				by[g] = append(by[g], op)
			}
			return [][]porcupine.Operation{by["a"], by["b"]}
		},
		Init: func() any { return NewMemoryStore() },
		Step: func(state, input, output any) (bool, any) {
			next := cloneMemoryStore(state.(*MemoryStore))
			got := input.(linInput).apply(context.Background(), next)
			return reflect.DeepEqual(got, output.(linOutput)), next
		},
		Equal: func(a, b any) bool {
			x, y := a.(*MemoryStore), b.(*MemoryStore)
			return reflect.DeepEqual(x.holds, y.holds) && reflect.DeepEqual(x.items, y.items)
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(linInput), output.(linOutput)
			return fmt.Sprintf("%s %s %v -> %+v", in.op, in.group, in.seqs, out)
		},
	}
}

// cloneMemoryStore copies m's maps; the records in them are values that
// no call changes in place.
func cloneMemoryStore(m *MemoryStore) *MemoryStore {
	c := NewMemoryStore()
	maps.Copy(c.holds, m.holds)
	for k, items := range m.items {
		c.items[k] = maps.Clone(items)
	}
	return c
}
