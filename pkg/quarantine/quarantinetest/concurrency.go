package quarantinetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// testConcurrentParks parks overlapping windows of one group at once:
// each message is counted once, whichever park wrote it.
func testConcurrentParks(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	now := b.tick()
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for w := range 5 {
		wg.Go(func() {
			ns := make([]int, 10)
			for i := range ns {
				ns[i] = w*5 + i + 1 // 1-10, 6-15, ..., 21-30
			}
			_, errs[w] = b.store.Park(b.ctx, b.queue, "g", items(ns...), w == 0, "boom", now)
		})
	}
	wg.Wait()
	for w, err := range errs {
		require.NoError(t, err, "park %d", w)
	}
	h := b.hold(t, "g")
	require.Equal(t, int64(30), h.Parked)
	require.Equal(t, [2]string{seq(1), seq(30)}, [2]string{h.From, h.Through})
	require.Equal(t, quarantine.StateHeld, h.State)
	require.Len(t, b.messages(t, "g", quarantine.StatusParked), 30)
	b.requireCounted(t, "g")
}

// testConcurrentUnparks finishes every parked message of a draining
// group at once (the oldest done, the others discarded): exactly one call
// releases the hold, and the hold's version condition keeps each write's
// Next from another's.
func testConcurrentUnparks(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.park(t, "g", true, "boom", 1, 2, 3, 4, 5, 6)
	epoch := b.redrive(t, "g").Epoch
	now := b.tick()
	var wg sync.WaitGroup
	got := make([]quarantine.HoldRecord, 6)
	errs := make([]error, 6)
	for i := range 6 {
		wg.Go(func() {
			if i == 0 {
				got[i], errs[i] = b.store.Done(b.ctx, b.queue, "g", seq(i+1), epoch, now)
			} else {
				got[i], errs[i] = b.store.Discard(b.ctx, b.queue, "g", seq(i+1), now)
			}
		})
	}
	wg.Wait()
	var released int
	var counts []int64
	for i, err := range errs {
		require.NoError(t, err, "call %d", i)
		if got[i].State == quarantine.StateReleased {
			released++
		}
		counts = append(counts, got[i].Parked)
		require.Equal(t, got[i].Parked > 0, got[i].Next != "", "call %d: %+v", i, got[i])
	}
	require.Equal(t, 1, released, "one call releases the hold")
	require.ElementsMatch(t, []int64{0, 1, 2, 3, 4, 5}, counts, "each call took one message off the count")
	h := b.hold(t, "g")
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Zero(t, h.Parked)
	require.Equal(t, map[string]quarantine.Status{
		"1": quarantine.StatusDone, "2": quarantine.StatusDiscarded, "3": quarantine.StatusDiscarded,
		"4": quarantine.StatusDiscarded, "5": quarantine.StatusDiscarded, "6": quarantine.StatusDiscarded,
	}, statuses(b.messages(t, "g", "")))
}

// testConcurrentParksAndDonesKeepTheOrder redrives a group while older
// messages keep being parked into it and a redrive keeps beginning: a
// Done succeeds only on the oldest message parked at the moment it
// writes (the hold it returns names no older one next), so no message
// runs before an older one, and the count and Next hold throughout.
func testConcurrentParksAndDonesKeepTheOrder(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	ns := make([]int, 20)
	for i := range ns {
		ns[i] = 100 + i
	}
	b.park(t, "g", true, "boom", ns...)
	b.redrive(t, "g")
	now := b.tick()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var broken []string
	dones := 0
	wg.Go(func() { // the copies: each finishes the hold's next
		for range 60 {
			h, err := b.store.Hold(b.ctx, b.queue, "g")
			if err != nil || h.State != quarantine.StateDraining {
				continue
			}
			got, err := b.store.Done(b.ctx, b.queue, "g", h.Next, h.Epoch, now)
			if errors.Is(err, quarantine.ErrConflict) || errors.Is(err, quarantine.ErrNoHold) {
				continue
			}
			mu.Lock()
			switch {
			case err != nil:
				broken = append(broken, "done: "+err.Error())
			case got.Next != "" && got.Next < h.Next:
				broken = append(broken, "message "+quarantine.SeqNumber(h.Next)+" done while "+quarantine.SeqNumber(got.Next)+" was parked")
			default:
				dones++
			}
			mu.Unlock()
		}
	})
	wg.Go(func() { // failures parking ever older messages
		for n := 99; n >= 80; n-- {
			if _, err := b.store.Park(b.ctx, b.queue, "g", items(n), false, "older", now); err != nil {
				mu.Lock()
				broken = append(broken, "park: "+err.Error())
				mu.Unlock()
			}
		}
	})
	wg.Go(func() { // an operator redriving whenever the group is held
		for range 20 {
			if _, err := b.store.BeginRedrive(b.ctx, b.queue, "g", now); err != nil && !errors.Is(err, quarantine.ErrNoHold) {
				mu.Lock()
				broken = append(broken, "redrive: "+err.Error())
				mu.Unlock()
			}
		}
	})
	wg.Wait()
	require.Empty(t, broken)
	require.Positive(t, dones, "no copy finished: the test raced nothing")
	b.requireCounted(t, "g")
	require.Len(t, b.messages(t, "g", quarantine.StatusDone), dones, "every done counted once")
}
