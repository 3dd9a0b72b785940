package backoff

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestDelayDoublesWithinHalfJitterUpToTheCap(t *testing.T) {
	t.Parallel()
	base, max := 10*time.Millisecond, 75*time.Millisecond
	for retry, want := range map[int]time.Duration{1: 10, 2: 20, 3: 40, 4: 75, 9: 75, 1000: 75} {
		want *= time.Millisecond
		for range 200 {
			got := Delay(base, max, retry)
			if got < want/2 || got > want {
				t.Fatalf("Delay(retry %d) = %v, want within [%v, %v]", retry, got, want/2, want)
			}
		}
	}
}

func TestDelayIsRandomInItsUpperHalf(t *testing.T) {
	t.Parallel()
	seen := map[time.Duration]bool{}
	for range 100 {
		seen[Delay(time.Second, time.Second, 1)] = true
	}
	if len(seen) < 50 {
		t.Fatalf("100 delays took only %d distinct values: not jittered", len(seen))
	}
}

func TestDelayOfNoBaseIsZero(t *testing.T) {
	t.Parallel()
	if d := Delay(0, time.Second, 3); d != 0 {
		t.Fatalf("Delay(0) = %v, want 0", d)
	}
	if d := Delay(-time.Second, time.Second, 1); d != 0 {
		t.Fatalf("Delay(-1s) = %v, want 0", d)
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sleep = %v, want DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("waited %v, want the context's 1s", waited)
		}
		if err := Sleep(context.Background(), time.Minute); err != nil {
			t.Fatalf("Sleep(1m) = %v", err)
		}
		if waited := time.Since(start); waited != time.Second+time.Minute {
			t.Fatalf("waited %v in all, want 1m1s", waited)
		}
		if err := Sleep(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sleep(0) on an ended context = %v, want its error", err)
		}
	})
}
