package lanes_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// Records of three keys run per key in order, the keys in parallel.
func Example() {
	records := []string{"a:1", "b:1", "a:2", "c:1", "b:2", "a:3"}
	engine, err := lanes.New(lanes.Config{Concurrency: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	plan := engine.Plan(len(records), func(i int) (string, bool) {
		key, _, _ := strings.Cut(records[i], ":")
		return key, true
	})
	run, cancel := engine.Start(context.Background())
	defer cancel()

	var mu sync.Mutex
	done := map[string][]string{}
	run.Lanes(plan, lanes.RunnerFunc(func(head int) {
		for i := head; i >= 0 && run.TimeToStart(); i = plan.Next(i) {
			key, seq, _ := strings.Cut(records[i], ":")
			mu.Lock()
			done[key] = append(done[key], seq)
			mu.Unlock()
		}
	}))
	fmt.Println(plan.Lanes(), "lanes:", done["a"], done["b"], done["c"])
	// Output: 3 lanes: [1 2 3] [1 2] [1]
}
