package jobs

import (
	"context"
	"sync"
	"sync/atomic"
)

// maxInFlight bounds the requests a listing (one Query per shard of the
// live or finished index) or a GetMany (one BatchGetItem per 100 ids) has
// in flight at once. The SDK's HTTP client keeps 10 idle connections per
// host (aws/transport/http DefaultHTTPTransportMaxIdleConnsPerHost), so 8
// reuse warm connections and leave two for the caller's other requests;
// more would open new ones on every page and, with 256 shards, burst a
// table's read capacity for a look. Sixteen shards take two rounds.
const maxInFlight = 8

// fanOut calls each for 0 to n-1, at most maxInFlight at a time, and
// returns the results by index, as a loop would have. The first error
// cancels the context the others run under, starts no more, and is the one
// returned (each names its own index: the shard or chunk); a cancelled
// caller's context is returned as its error.
func fanOut[T any](ctx context.Context, n int, each func(ctx context.Context, i int) (T, error)) ([]T, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make([]T, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, maxInFlight) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				r, err := each(ctx, i)
				if err != nil {
					cancel(err) // only the first cause is kept
					return
				}
				results[i] = r
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return results, nil
}
