package jobs

// StepKind is what a transition of a job's History was.
type StepKind string

// The kinds of step. The value is the word the CLI's timeline prints.
const (
	StepCreated   StepKind = "created"
	StepClaimed   StepKind = "claimed"    // pending → running, generation 1
	StepTakenOver StepKind = "taken over" // running → running, the next generation: the lease had run out
	StepRenewed   StepKind = "renewed"
	StepNudged    StepKind = "nudged"    // a pending job's run command issued again
	StepRequeued  StepKind = "requeued"  // a running job's run command issued again: its lease had run out
	StepCompleted StepKind = "completed" // a candidate accepted
	StepFailed    StepKind = "failed"    // by its holder, or by a takeover beyond the recovery policy
	StepCancelled StepKind = "cancelled"
)

// Step is one entry of a job's History and what it was.
type Step struct {
	Transition
	Kind StepKind
	// LeaseRanOut says the transition followed the end of a lease: a
	// takeover, a requeue, or a failure under the recovery policy (the
	// takeover of the last generation allowed).
	LeaseRanOut bool
}

// String is the step as the timeline prints it: "claimed", "lease ran out
// → taken over".
func (s Step) String() string {
	if s.LeaseRanOut {
		return "lease ran out → " + string(s.Kind)
	}
	return string(s.Kind)
}

// Describe says what each transition of history (a Job's History, oldest
// first) was, in the same order. It is the one reading of a history: the
// CLI's timeline (fifoworker jobs get --timeline) and the console's
// picture both use it.
//
// Each entry is read with the entry before it, when there is one at the
// version before (a bounded or a legacy history starts without it):
//
//   - version 0 is the creation;
//   - a raised generation is a claim when the job was pending (only a
//     pending job is at generation 0, so the claim makes generation 1),
//     and a takeover of a lease that ran out when it was running (the
//     generation was at least 1); a cancellation and a failure under the
//     recovery policy raise it too;
//   - at the same generation, a pending job stays pending only by a
//     nudge; a running job stays running by a renewal, or by the nudge of
//     a lease that ran out (a requeue), which only the entry's Event tells
//     apart (without it, a renewal);
//   - a final status is the accept, the failure or the cancellation.
func Describe(history []Transition) []Step {
	steps := make([]Step, 0, len(history))
	for i, t := range history {
		var prev *Transition
		if i > 0 && history[i-1].Version == t.Version-1 {
			prev = &history[i-1]
		}
		steps = append(steps, describe(prev, t))
	}
	return steps
}

func describe(prev *Transition, t Transition) Step {
	s := Step{Transition: t}
	raised := prev != nil && t.Generation > prev.Generation
	switch {
	case t.Version == 0:
		s.Kind = StepCreated
	case t.Status == StatusCancelled:
		s.Kind = StepCancelled
	case t.Status == StatusCompleted:
		s.Kind = StepCompleted
	case t.Status == StatusFailed:
		s.Kind, s.LeaseRanOut = StepFailed, raised && prev.Status == StatusRunning
	case t.Status == StatusPending:
		s.Kind = StepNudged
	case t.Event == MessageRun:
		s.Kind, s.LeaseRanOut = StepRequeued, true
	case raised || (prev == nil && t.Event == EventStarted):
		// A claim makes generation 1; any later one is a takeover.
		s.Kind = StepClaimed
		if t.Generation > 1 {
			s.Kind, s.LeaseRanOut = StepTakenOver, true
		}
	default:
		s.Kind = StepRenewed
	}
	return s
}
