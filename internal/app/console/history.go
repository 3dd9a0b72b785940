package console

import (
	"fmt"
	"strings"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// step is one entry of a job's history as the pages show it: what it was
// is jobs.Describe's reading, the one the CLI's timeline prints too.
type step struct {
	jobs.Step
	Kind string // the step's kind as a CSS class and data-kind: "taken-over"
	What string // "lease ran out → taken over (generation 3)"
}

func historySteps(h []jobs.Transition) []step {
	described := jobs.Describe(h)
	out := make([]step, 0, len(described))
	for _, s := range described {
		out = append(out, step{Step: s, Kind: strings.ReplaceAll(string(s.Kind), " ", "-"),
			What: fmt.Sprintf("%s (generation %d)", s, s.Generation)})
	}
	return out
}
