package candidate_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// pastOnePage is one more candidate than one ListObjectsV2 page holds, so
// that List must follow S3's continuation to see the last one.
const pastOnePage = candidate.MaxPageSize + 1

// TestListPastOnePage runs testListPastOnePage on s3mem;
// TestIntegrationListPastOnePage runs it on the emulator.
func TestListPastOnePage(t *testing.T) {
	t.Parallel()
	testListPastOnePage(t, setupMemoryS3(t))
}

// List lists every candidate of one job in key order, across pages of
// S3's own size (1,000), leaving out the keys under the job's prefix that
// are no candidate's and the neighbouring jobs' candidates.
func testListPastOnePage(t *testing.T, b *s3Bundle) {
	ctx := t.Context()
	want := make([]candidate.Key, pastOnePage)
	for i := range want {
		want[i] = mustKey(t, "job-7", int64(i+1), fmt.Sprintf("attempt-%d", i), "json")
	}
	// Raw puts, many at once: the listing reads no metadata, and the
	// emulator takes a while for a thousand sequential requests.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, k := range want {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			b.rawPut(t, k.String(), []byte(k.AttemptID), nil, "")
		})
	}
	wg.Wait()
	b.rawPut(t, "candidates/job-7/notes.txt", []byte("not a candidate"), nil, "")
	b.rawPut(t, mustKey(t, "job-70", 1, "neighbour", "json").String(), []byte("job-70"), nil, "")
	b.rawPut(t, mustKey(t, "job-6", 1, "neighbour", "json").String(), []byte("job-6"), nil, "")

	entries, err := b.store.List(ctx, "job-7")
	require.NoError(t, err)
	got := make([]candidate.Key, len(entries))
	for i, e := range entries {
		got[i] = e.Key
		require.Equal(t, int64(len(e.Key.AttemptID)), e.Size, e.Key.String())
		require.NotEmpty(t, e.ETag, e.Key.String())
		require.False(t, e.LastModified.IsZero(), e.Key.String())
	}
	require.Equal(t, want, got)
}

// On the test bucket's pages of two, List asks for each page once and
// stops at the last: five objects under the prefix take three requests.
func TestListFollowsEveryPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	for g := range int64(4) {
		_, err := b.store.Put(ctx, mustKey(t, "job-42", g+1, "a", "json"), strings.NewReader("x"))
		require.NoError(t, err)
	}
	b.bucket.rawPut(t, "candidates/job-42/zz-notes.txt", []byte("not a candidate"), nil)
	b.bucket.TakeCalls()
	entries, err := b.store.List(ctx, "job-42")
	require.NoError(t, err)
	require.Len(t, entries, 4)
	require.Equal(t, 3, b.bucket.TakeCalls()[s3mem.OpListObjectsV2])
}
