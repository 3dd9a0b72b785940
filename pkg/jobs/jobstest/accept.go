package jobstest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// testAcceptOwnKeyOnly: an accept's result key must be the caller's own
// candidate key, candidates/<job>/g<generation, 10 digits>/<attempt>.<ext>;
// any other is ErrInvalid and nothing is written.
func testAcceptOwnKeyOnly(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	other := b.create(t, "job-43").ID
	j := b.claim(t, id, "attempt-a", time.Minute)
	accept := func(key string) error {
		r := result(id, "attempt-a", 1)
		r.Key = key
		_, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
			Result: r, Progress: 1})
		return err
	}
	for name, key := range map[string]string{
		"another job's":          result(other, "attempt-a", 1).Key,
		"another generation's":   result(id, "attempt-a", 2).Key,
		"another attempt's":      result(id, "attempt-b", 1).Key,
		"a job id's prefix":      fmt.Sprintf("candidates/%s/g%010d/attempt-a.json", strings.TrimSuffix(id, id[len(id)-1:]), 1),
		"an unpadded generation": fmt.Sprintf("candidates/%s/g1/attempt-a.json", id),
		"no extension":           fmt.Sprintf("candidates/%s/g%010d/attempt-a", id, 1),
		"an upper-case ext":      fmt.Sprintf("candidates/%s/g%010d/attempt-a.JSON", id, 1),
		"a path in the ext":      fmt.Sprintf("candidates/%s/g%010d/attempt-a.json/x", id, 1),
		"another prefix":         fmt.Sprintf("results/%s/g%010d/attempt-a.json", id, 1),
		"empty":                  "",
	} {
		require.ErrorIs(t, accept(key), jobs.ErrInvalid, name)
		b.requireUnchanged(t, j)
	}
	require.NoError(t, accept(result(id, "attempt-a", 1).Key))
}

func testAcceptAfterExpiry(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	j := b.claim(t, id, "attempt-a", time.Minute)
	// Expired, but nobody took over: the generation is still current.
	b.clock.Advance(time.Hour)
	done, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
		Result: result(id, "attempt-a", 1), Progress: 7})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCompleted, done.Status)
}
