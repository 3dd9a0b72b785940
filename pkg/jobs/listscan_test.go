package jobs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// scanStore is a memory store whose live index holds common pending jobs
// and then, changed after them, the running jobs named rare: the rare
// status a filtered listing looks for behind the common ones.
func scanStore(t *testing.T, common int, rare ...string) (*jobs.MemoryStore, *jobstest.Clock) {
	t.Helper()
	clock := jobstest.NewClock(jobstest.Start)
	store, err := jobs.NewMemoryStore(jobs.Config{Now: clock.Now})
	require.NoError(t, err)
	for i := range common {
		clock.Advance(time.Millisecond)
		id := fmt.Sprintf("common-%04d", i)
		_, err := store.Create(t.Context(), jobs.CreateRequest{JobID: id, IntentID: id, Tenant: "t-1"})
		require.NoError(t, err)
	}
	for _, id := range rare {
		clock.Advance(time.Millisecond)
		_, err := store.Create(t.Context(), jobs.CreateRequest{JobID: id, IntentID: id, Tenant: "t-1"})
		require.NoError(t, err)
		_, err = store.Claim(t.Context(), jobs.ClaimRequest{JobID: id, AttemptID: "attempt-" + id, LeaseUntil: clock.Now().Add(10 * time.Minute)})
		require.NoError(t, err)
	}
	return store, clock
}

func ids(js []jobs.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

// A page filtered by status examines at most ListScan index entries: a
// running job behind ListScan-1 pending ones is the ListScan-th entry and
// is shown; one behind ListScan is not, and the page ends with no job,
// More and a token that resumes at it. With two rare jobs there, the page
// shows the ListScan-th and the next page the one after: it stopped at
// exactly ListScan entries.
func TestAFilteredPageExaminesAtMostListScanEntries(t *testing.T) {
	t.Parallel()
	running := jobs.ListOptions{Status: jobs.StatusRunning}
	for _, c := range []struct {
		name   string
		common int
		rare   []string
		pages  [][]string
	}{
		{"the rare job is the ListScan-th entry", jobs.ListScan - 1, []string{"rare-1"}, [][]string{{"rare-1"}}},
		{"the rare job is entry ListScan+1", jobs.ListScan, []string{"rare-1"}, [][]string{{}, {"rare-1"}}},
		{"rare jobs at entries ListScan and ListScan+1", jobs.ListScan - 1, []string{"rare-1", "rare-2"}, [][]string{{"rare-1"}, {"rare-2"}}},
	} {
		store, clock := scanStore(t, c.common, c.rare...)
		o := running
		for i, want := range c.pages {
			page, err := jobs.List(t.Context(), store, o, clock.Now())
			require.NoError(t, err, c.name)
			require.Equal(t, want, ids(page.Jobs), "%s: page %d", c.name, i+1)
			last := i == len(c.pages)-1
			require.Equal(t, !last, page.More, "%s: page %d's More", c.name, i+1)
			require.Equal(t, !last, page.Token != "", "%s: page %d's token", c.name, i+1)
			o.Token = page.Token
		}
	}
}
