package candidate_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/candidate/candidatetest"
)

// spoolBundle is a store whose spool is a disk of a fixed size
// (candidatetest.Disk), bounded by a budget of the same size.
type spoolBundle struct {
	bucket *bucket
	disk   *candidatetest.Disk
	store  *candidate.Store
}

// newDisk is a candidatetest.Disk of size bytes.
func newDisk(t testing.TB, size int64) *candidatetest.Disk {
	t.Helper()
	d, err := candidatetest.NewDisk(candidatetest.DiskConfig{Size: size})
	require.NoError(t, err)
	return d
}

func setupSpool(t *testing.T, maxSize, budget int64) *spoolBundle {
	t.Helper()
	b := &spoolBundle{bucket: newBucket(t), disk: newDisk(t, budget)}
	var err error
	b.store, err = candidate.New(candidate.Config{Client: b.bucket, Bucket: testBucket, Spool: b.disk, MaxSize: maxSize, SpoolBudget: budget})
	require.NoError(t, err)
	return b
}

// The scenario that deadlocks a budget granted write by write: two writers
// of candidates of the max size M share a spool of 1.5 M. Granted as they
// write, each would hold 0.75 M and wait for the other's room for ever.
// Here A reserves the whole of M before its first byte, B waits for room
// before it has any, A writes all of M and gives it back with its commit,
// and then B writes all of M: both candidates are stored, and the spool
// never held more than its budget.
func TestSpoolBudgetCannotDeadlockTwoWritersOfTheMaxSize(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const m = 1 << 16
		b := setupSpool(t, m, m+m/2)
		content := bytes.Repeat([]byte("x"), m)
		ctx := context.Background()

		a, err := b.store.Create(ctx, mustKey(t, "job-a", 1, "a", "txt"))
		require.NoError(t, err)
		_, err = a.Write(content[:m/2])
		require.NoError(t, err)

		bDone := make(chan error, 1)
		bCreated := make(chan struct{})
		go func() {
			w, err := b.store.Create(ctx, mustKey(t, "job-b", 1, "b", "txt"))
			if err != nil {
				bDone <- err
				return
			}
			close(bCreated)
			if _, err := w.Write(content); err != nil {
				bDone <- err
				return
			}
			_, err = w.Commit()
			bDone <- err
		}()
		synctest.Wait()
		select {
		case <-bCreated:
			t.Fatal("B got room while A holds its reservation")
		default:
		}

		_, err = a.Write(content[m/2:]) // a budget granted byte by byte would wait here for B's half
		require.NoError(t, err)
		_, err = a.Commit()
		require.NoError(t, err)
		require.NoError(t, <-bDone)

		require.Equal(t, []string{"candidates/job-a/g0000000001/a.txt", "candidates/job-b/g0000000001/b.txt"}, b.bucket.Keys(testBucket, ""))
		stats := b.disk.Stats()
		require.LessOrEqual(t, stats.Peak, int64(m+m/2))
		require.Zero(t, stats.Full, "no write was refused for space")
		require.Zero(t, stats.Used)
	})
}

// The budget admits budget / max size candidates at once, counted at
// exactly the bound: 3M - 1 admits two, 3M three, and the next waits.
func TestSpoolBudgetAdmitsBudgetOverMaxSizeAtOnce(t *testing.T) {
	t.Parallel()
	const m = 1000
	for budget, want := range map[int64]int{m: 1, 2*m - 1: 1, 2 * m: 2, 3*m - 1: 2, 3 * m: 3} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := setupSpool(t, m, budget)
				var held []*candidate.Reservation
				for range want {
					r, err := b.store.Reserve(t.Context())
					require.NoError(t, err)
					require.False(t, r.Waited())
					held = append(held, r)
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				start := time.Now()
				_, err := b.store.Reserve(ctx)
				require.ErrorIs(t, err, candidate.ErrSpoolBusy)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				require.Equal(t, time.Minute, time.Since(start), "it waited until its context ended")

				held[0].Release()
				held[0].Release() // a second release gives nothing back twice
				r, err := b.store.Reserve(t.Context())
				require.NoError(t, err, "the released room, and only it, is free again")
				ctx, cancel = context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				_, err = b.store.Reserve(ctx)
				require.ErrorIs(t, err, candidate.ErrSpoolBusy)
				r.Release()
			})
		})
	}
}

// A waiting reservation gets the room as soon as a writer is closed, and
// a writer made from a reservation gives the room back with its Close,
// whatever the outcome; a reservation makes one writer.
func TestReservationIsGivenBackByTheWritersClose(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupSpool(t, 10, 10)
		r, err := b.store.Reserve(t.Context())
		require.NoError(t, err)
		w, err := r.Create(t.Context(), mustKey(t, "job-42", 1, "a", "txt"))
		require.NoError(t, err)
		_, err = r.Create(t.Context(), mustKey(t, "job-42", 1, "b", "txt"))
		require.ErrorContains(t, err, "the reservation was used or released")
		r.Release() // the writer took it over: this gives nothing back

		got := make(chan *candidate.Reservation, 1)
		go func() {
			r2, err := b.store.Reserve(t.Context())
			require.NoError(t, err)
			got <- r2
		}()
		synctest.Wait()
		require.Empty(t, got, "the writer still holds the room")
		_, err = w.Write([]byte("0123456789"))
		require.NoError(t, err)
		require.NoError(t, w.Close()) // discarded, not committed
		r2 := <-got
		require.True(t, r2.Waited())
		r2.Release()
		_, err = r2.Create(t.Context(), mustKey(t, "job-42", 1, "c", "txt"))
		require.ErrorContains(t, err, "the reservation was used or released")
		require.Zero(t, b.disk.Stats().Files)
	})
}

// The budget must hold a candidate of the max size: exactly the max size
// is accepted, one byte less refused.
func TestSpoolBudgetBelowTheMaxSizeIsRefused(t *testing.T) {
	t.Parallel()
	require.NoError(t, candidate.CheckSpoolBudget(100, 100))
	require.ErrorIs(t, candidate.CheckSpoolBudget(100, 99), candidate.ErrBudgetTooSmall)
	require.Error(t, candidate.CheckSpoolBudget(100, -1))
	// New's checks of the same bounds: TestNewRefusesAnInvalidConfig.
}
