//go:build integration

package pgsource_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
)

// Two and four relays drain while three writers commit transitions: every
// message is published, each job's in version order, exactly once. With
// relays that crash now and then (a pass's context cancelled after a
// round), every message is still published, in order; only the messages of
// a crashed pass come again.
func TestConcurrentRelaysPublishEveryMessageInOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		relays int
		crash  bool
	}{{2, false}, {4, false}, {4, true}} {
		t.Run(fmt.Sprintf("%d relays crash %t", tc.relays, tc.crash), func(t *testing.T) {
			t.Parallel()
			const writers, perWriter, transitions = 3, 8, 7
			b := setup(t)
			var writing sync.WaitGroup
			var ids []string
			for w := range writers {
				mine := jobIDs(fmt.Sprintf("w%d", w), perWriter)
				ids = append(ids, mine...)
				writing.Go(func() {
					for _, id := range mine {
						if err := b.tryCreate(t.Context(), id, 0); err != nil {
							t.Error(err)
							return
						}
					}
					for range transitions {
						for _, id := range mine {
							if err := b.tryAdvance(t.Context(), id, 1); err != nil {
								t.Error(err)
								return
							}
						}
					}
				})
			}
			var done atomic.Bool
			var crashes atomic.Int64
			var relaying sync.WaitGroup
			for n := range tc.relays {
				sink := &crashingSink{recorder: b.sink, crash: tc.crash && n%2 == 0, crashes: &crashes}
				r := b.relay(t, pgsource.Config{Jobs: 5, RowsPerJob: 3, Sink: sink})
				relaying.Go(func() {
					for {
						finished := done.Load()
						ctx, cancel := context.WithCancel(t.Context())
						sink.cancel = cancel
						rep, err := r.Drain(ctx)
						cancel()
						if err != nil && !errors.Is(err, context.Canceled) {
							t.Errorf("relay %d: %v", n, err)
							return
						}
						if err != nil {
							continue
						}
						if finished && rep.Stop == pgsource.StopEmpty && rep.Passes == 0 && rep.Held == 0 {
							return
						}
					}
				})
			}
			writing.Wait()
			done.Store(true)
			relaying.Wait()
			require.Zero(t, b.rows(t))
			if tc.crash {
				require.Positive(t, crashes.Load(), "no relay crashed")
				requireInOrder(t, b.sink, want(ids, transitions))
			} else {
				requireExactly(t, b.sink, want(ids, transitions))
			}
		})
	}
}

// crashingSink is the shared recorder, through which a crashing relay
// cancels its own Drain after every fifth round it had acknowledged.
type crashingSink struct {
	*recorder
	crash   bool
	rounds  int
	crashes *atomic.Int64
	cancel  context.CancelFunc
}

func (s *crashingSink) Send(ctx context.Context, msgs []outbox.Message, trace string) []error {
	errs := s.recorder.Send(ctx, msgs, trace)
	if s.rounds++; s.crash && s.rounds%5 == 0 {
		s.crashes.Add(1)
		s.cancel()
	}
	return errs
}
