package jobstest_test

import (
	"fmt"
	"time"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// A lease expires by the store's clock, not the wall's, so a test moves time
// on instead of waiting for it. Pass clock.Now as jobs.Config's Now.
func ExampleClock() {
	clock := jobstest.NewClock(jobstest.Start)
	leaseEnds := clock.Now().Add(30 * time.Second)

	clock.Advance(29 * time.Second)
	fmt.Println(clock.Now().Before(leaseEnds))
	clock.Advance(time.Second)
	fmt.Println(clock.Now().Before(leaseEnds), clock.Now().Format(time.RFC3339))
	// Output:
	// true
	// false 2026-11-04T09:00:30Z
}
