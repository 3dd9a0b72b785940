package sweeper_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// candidate.Store.ListPage, which the sweeper walks the bucket with: one
// request per page, candidates and unparsable keys apart, in key order, and
// Next until the end. (It lives here, next to the counting bucket it runs
// on.)
func TestListPageWalksTheWholePrefixInKeyOrder(t *testing.T) {
	t.Parallel()
	clock := jobstest.NewClock(jobstest.Start)
	fake := newBucket(t, clock.Now)
	store, err := candidate.New(candidate.Config{Client: fake, Bucket: testBucket})
	require.NoError(t, err)
	ctx := t.Context()
	var want []string
	for j := range 3 {
		for g := range 2 {
			k := key(fmt.Sprintf("job-%d", j), int64(g+1), "attempt-a")
			fake.rawPut(t, k, []byte("x"))
			want = append(want, k)
			clock.Advance(time.Second)
		}
	}
	fake.rawPut(t, "candidates/job-1/notes.txt", []byte("notes"))
	fake.rawPut(t, "elsewhere/job-0/g0000000001/attempt-a.csv", []byte("x")) // not under the prefix
	fake.rawPut(t, "sweeper/cursor", []byte("candidates/job-0"))

	p, err := store.ListPage(ctx, "", 4)
	require.NoError(t, err)
	require.Equal(t, want[:4], entryKeys(p))
	require.Empty(t, p.Unparsable)
	require.Equal(t, want[3], p.Next)
	require.Equal(t, jobstest.Start.Add(3*time.Second).UnixMilli(), p.Entries[3].LastModified.UnixMilli())
	require.Equal(t, int64(1), p.Entries[3].Size)

	// The next page holds the unparsable key apart, in its place in the order.
	p, err = store.ListPage(ctx, p.Next, 4)
	require.NoError(t, err)
	require.Equal(t, want[4:6], entryKeys(p))
	require.Len(t, p.Unparsable, 1)
	require.Equal(t, "candidates/job-1/notes.txt", p.Unparsable[0].Key)
	require.Equal(t, int64(5), p.Unparsable[0].Size)
	require.ErrorIs(t, p.Unparsable[0].Err, candidate.ErrInvalidKey)
	require.Empty(t, p.Next, "the end of the prefix")
	require.Equal(t, map[string]int{"ListObjectsV2": 2}, fake.TakeCalls(), "one request per page")

	// Any key may be the start: one that is not a candidate key, one past
	// the end.
	p, err = store.ListPage(ctx, "candidates/job-2", 100)
	require.NoError(t, err)
	require.Equal(t, want[4:], entryKeys(p))
	p, err = store.ListPage(ctx, "candidates/zzz", 100)
	require.NoError(t, err)
	require.Empty(t, p.Entries)
	require.Empty(t, p.Next)

	// A page holds at most MaxPageSize keys, one request's worth.
	_, err = store.ListPage(ctx, "", candidate.MaxPageSize*5)
	require.NoError(t, err)
	_, err = store.ListPage(ctx, "", 0)
	require.Error(t, err)

	fake.Fail(func(op, _ string) error { return errors.New("injected: " + op) })
	_, err = store.ListPage(ctx, "", 10)
	require.ErrorContains(t, err, "injected: ListObjectsV2")
}

func TestListPageAsksForAtMostMaxPageSize(t *testing.T) {
	t.Parallel()
	clock := jobstest.NewClock(jobstest.Start)
	fake := newBucket(t, clock.Now)
	store, err := candidate.New(candidate.Config{Client: fake, Bucket: testBucket})
	require.NoError(t, err)
	for i := range candidate.MaxPageSize + 5 {
		fake.rawPut(t, key(fmt.Sprintf("job-%04d", i), 1, "attempt-a"), []byte("x"))
	}
	p, err := store.ListPage(t.Context(), "", 5000)
	require.NoError(t, err)
	require.Len(t, p.Entries, candidate.MaxPageSize)
	require.Equal(t, key("job-0999", 1, "attempt-a"), p.Next)
	p, err = store.ListPage(t.Context(), p.Next, 5000)
	require.NoError(t, err)
	require.Len(t, p.Entries, 5)
	require.Empty(t, p.Next)
}

func entryKeys(p candidate.Page) []string {
	var keys []string
	for _, e := range p.Entries {
		keys = append(keys, e.Key.String())
	}
	return keys
}
