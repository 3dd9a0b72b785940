package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// BenchmarkPages renders each page over the memory stores holding 2,000
// jobs (a third of them running): the console's own cost, without a
// store's round trips (the browser test's benchmark measures those on
// the local stack).
//
//	go test -run '^$' -bench Pages -benchmem ./internal/app/console/
func BenchmarkPages(b *testing.B) {
	t := b
	bundle := setup(t, nil)
	const jobCount = 2000
	for i := range jobCount - 1 {
		id := fmt.Sprintf("job-%04d", i)
		bundle.create(t, id, fmt.Sprintf("tenant-%d", i%7))
		if i%3 == 0 {
			bundle.claim(t, id, "attempt-"+id)
		}
		bundle.clock.Advance(time.Millisecond)
	}
	j := bundle.storyJob(t, "job-story", jobs.MaxHistory-3) // 21 transitions: the 20 the item keeps
	if len(j.History) != jobs.MaxHistory {
		b.Fatalf("the story job keeps %d history entries, want %d", len(j.History), jobs.MaxHistory)
	}
	bundle.hold(t, "group-a", 20)
	for _, c := range []struct{ name, target, want string }{
		{"overview", "/", "250 or more"},
		{"jobs", "/jobs", `data-testid="next-page"`},
		{"job", "/jobs/job-story", `data-testid="timeline"`},
		{"group", "/quarantine/commands/group-a", `data-seq="1020"`},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := bundle.request(http.MethodGet, c.target, nil)
			w := httptest.NewRecorder()
			bundle.console.ServeHTTP(w, r)
			require.Equal(b, http.StatusOK, w.Code)
			require.True(b, strings.Contains(w.Body.String(), c.want), "%s lacks %s", c.target, c.want)
			if c.name == "jobs" {
				require.Equal(b, jobs.DefaultListLimit, strings.Count(w.Body.String(), `data-testid="job-row"`))
			}
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				bundle.console.ServeHTTP(w, r)
			}
		})
	}
}
