package faultproxy_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
)

// Each latency bound left zero takes its default on its own (MinLatency
// 20 ms, MaxLatency 200 ms), and a default never crosses the bound that
// was set: MinLatency alone above 200 ms makes MaxLatency the same, and
// MaxLatency alone below 20 ms makes MinLatency the same. Each row sits at
// a bound; the delays drawn show the bounds the proxy took.
func TestEachLatencyBoundDefaultsOnItsOwn(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	for _, tc := range []struct {
		name             string
		minSet, maxSet   time.Duration
		wantMin, wantMax time.Duration
	}{
		{"both defaults", 0, 0, 20 * ms, 200 * ms},
		{"min alone", 50 * ms, 0, 50 * ms, 200 * ms},
		{"min alone at the max's default", 200 * ms, 0, 200 * ms, 200 * ms},
		{"min alone above the max's default", 200*ms + 1, 0, 200*ms + 1, 200*ms + 1},
		{"max alone", 0, 100 * ms, 20 * ms, 100 * ms},
		{"max alone just above the min's default", 0, 20*ms + 1, 20 * ms, 20*ms + 1},
		{"max alone at the min's default", 0, 20 * ms, 20 * ms, 20 * ms},
		{"max alone below the min's default", 0, 20*ms - 1, 20*ms - 1, 20*ms - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, faultproxy.DynamoDB)
			var slept sleeps
			p := newProxy(t, faultproxy.Config{
				Service: faultproxy.DynamoDB, Target: up.srv.URL, Seed: 3, Rates: faultproxy.Rates{Latency: 1},
				MinLatency: tc.minSet, MaxLatency: tc.maxSet, Sleep: slept.sleep,
			})
			for range 8 {
				require.NoError(t, call(t.Context(), faultproxy.DynamoDB, p.URL, 1))
			}
			require.Len(t, slept.all(), 8)
			for _, d := range slept.all() {
				require.GreaterOrEqual(t, d, tc.wantMin)
				require.LessOrEqual(t, d, tc.wantMax)
			}
		})
	}
}

// Only bounds set on both sides can be reversed; a negative bound is
// refused on either side.
func TestLatencyBoundsThatCannotBe(t *testing.T) {
	t.Parallel()
	const target = "http://127.0.0.1:1"
	for _, tc := range []struct {
		name, field string
		min, max    time.Duration
	}{
		{"reversed by a nanosecond", "MaxLatency", time.Second, time.Second - 1},
		{"negative min", "MinLatency", -1, 0},
		{"negative max", "MaxLatency", 0, -1},
	} {
		cfg := faultproxy.Config{Service: faultproxy.S3, Target: target, MinLatency: tc.min, MaxLatency: tc.max}
		_, err := faultproxy.New(cfg)
		require.ErrorIs(t, err, faultproxy.ErrInvalidConfig, tc.name)
		require.ErrorContains(t, err, tc.field, tc.name)
	}
	require.NoError(t, faultproxy.Config{Service: faultproxy.S3, Target: target, MinLatency: time.Second, MaxLatency: time.Second}.Validate())
}

// sleeps is a proxy's Sleep that records each delay it is asked for and
// returns at once: no clock is read.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}
