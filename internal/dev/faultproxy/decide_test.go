package faultproxy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The n-th request of an operation gets the same decision under the same
// seed, however the operations interleave; another seed gives another
// sequence.
func TestDecisionsReplayPerOperation(t *testing.T) {
	t.Parallel()
	rates := Rates{Latency: 0.3, ServerError: 0.1, Throttle: 0.1, Reset: 0.1, Drop: 0.1}
	newP := func(seed uint64) *Proxy {
		p, err := New(Config{Service: DynamoDB, Target: "http://127.0.0.1:1", Seed: seed, Rates: rates})
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	run := func(p *Proxy, order []string) map[string][]decision {
		out := map[string][]decision{}
		for _, op := range order {
			out[op] = append(out[op], p.decide(op))
		}
		return out
	}
	var a, b []string
	for i := range 200 {
		a = append(a, "UpdateItem")
		if i%3 == 0 {
			a = append(a, "Query")
		}
	}
	for i := range 200 {
		if i < 67 {
			b = append(b, "Query") // every Query first
		}
		b = append(b, "UpdateItem")
	}
	first := run(newP(7), a)
	second := run(newP(7), b)
	require.Equal(t, first, second)
	require.NotEqual(t, first, run(newP(8), a))

	faults := map[Kind]int{}
	for _, d := range first["UpdateItem"] {
		faults[d.fault]++
		if d.delay > 0 {
			faults[Latency]++
		}
	}
	for _, k := range Kinds {
		require.Positive(t, faults[k], "%s drawn in 200 requests", k)
	}
}
