package jobstest

import (
	"fmt"

	"github.com/anishathalye/porcupine"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Op is the input of one recorded operation.
type Op struct {
	Kind      string // claim, renew, accept, fail, cancel, nudge, get
	JobID     string
	AttemptID string
	G, V      int64
	Until     int64 // lease end, epoch ms
	Progress  int64
	Key       string // result key (accept)
	// NowLo and NowHi bracket the clock reading the store made: the clock
	// before the call and after the return (epoch ms).
	NowLo, NowHi int64
}

// Outcome is the output of one recorded operation.
type Outcome struct {
	Kind  string // ok, stale, held, final, notfound, invalid
	State        // ok: the job returned; held: the holder's owner, generation and until; stale: generation, version and status
}

// State is the model's view of one job.
type State struct {
	Status   jobs.Status
	G, V     int64
	Owner    string
	Until    int64
	Key      string
	Progress int64
	// Nudged: the last transition was a nudge (its outbox holds a run
	// command after creation), which a retry of the nudge recognises.
	Nudged bool
}

func stateOf(j jobs.Job) State {
	s := State{Status: j.Status, G: j.Generation, V: j.Version, Owner: j.LeaseOwner, Key: j.Result.Key, Progress: j.Progress,
		Nudged: j.Version > 0 && j.Outbox.Type == jobs.MessageRun}
	if !j.LeaseExpiresAt.IsZero() {
		s.Until = j.LeaseExpiresAt.UnixMilli()
	}
	return s
}

// Model is the job state machine as porcupine sees it, partitioned by job
// id; every job starts pending at generation and version 0. A claim's
// lease check may have read any time between NowLo and NowHi.
func Model(maxGenerations int64) porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byJob := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range history {
				id := op.Input.(Op).JobID
				if _, ok := byJob[id]; !ok {
					order = append(order, id)
				}
				byJob[id] = append(byJob[id], op)
			}
			parts := make([][]porcupine.Operation, 0, len(order))
			for _, id := range order {
				parts = append(parts, byJob[id])
			}
			return parts
		},
		Init: func() any { return State{Status: jobs.StatusPending} },
		Step: func(state, input, output any) (bool, any) {
			return step(state.(State), input.(Op), output.(Outcome), maxGenerations)
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(Op), output.(Outcome)
			return fmt.Sprintf("%s(%s g%d v%d) → %s %+v", in.Kind, in.AttemptID, in.G, in.V, out.Kind, out.State)
		},
		DescribeState: func(state any) string { return fmt.Sprintf("%+v", state) },
	}
}

func step(s State, in Op, out Outcome, maxGenerations int64) (bool, any) {
	final := s.Status.Final()
	if out.Kind == "invalid" {
		return in.Until <= in.NowHi, s
	}
	switch in.Kind {
	case "get":
		return out.Kind == "ok" && out.State == s, s
	case "claim":
		switch out.Kind {
		case "ok":
			if s.Status == jobs.StatusRunning && s.Owner == in.AttemptID && s.Until >= in.NowLo && out.State == s {
				// A recognised retry: only while its lease is live.
				return true, s
			}
			// A claim from pending, or a takeover of an ended lease (the
			// caller's own included).
			next := State{Status: jobs.StatusRunning, G: s.G + 1, V: s.V + 1, Owner: in.AttemptID, Until: in.Until}
			ok := s.Status == jobs.StatusPending ||
				(s.Status == jobs.StatusRunning && s.Until < in.NowHi && s.G < maxGenerations)
			return ok && out.State == next, next
		case "held":
			ok := s.Status == jobs.StatusRunning && s.Owner != in.AttemptID && s.Until >= in.NowLo &&
				out.Owner == s.Owner && out.G == s.G && out.Until == s.Until
			return ok, s
		case "final":
			if final {
				return out.Status == s.Status, s
			}
			next := s
			next.Status, next.G, next.V, next.Nudged = jobs.StatusFailed, s.G+1, s.V+1, false
			ok := s.Status == jobs.StatusRunning && s.Until < in.NowHi &&
				s.G >= maxGenerations && out.Status == jobs.StatusFailed
			return ok, next
		}
		return false, s
	case "cancel":
		switch out.Kind {
		case "ok":
			if s.Status == jobs.StatusCancelled {
				return out.State == s, s
			}
			next := s
			next.Status, next.G, next.V, next.Nudged = jobs.StatusCancelled, s.G+1, s.V+1, false
			return !final && out.State == next, next
		case "final":
			return final && s.Status != jobs.StatusCancelled && out.Status == s.Status, s
		}
		return false, s
	case "renew", "accept", "fail":
		var done State // the state the write leads to
		done = s
		done.V, done.Nudged = in.V+1, false
		switch in.Kind {
		case "renew":
			done.Status, done.Until, done.Progress = jobs.StatusRunning, in.Until, in.Progress
		case "accept":
			done.Status, done.Key, done.Progress = jobs.StatusCompleted, in.Key, in.Progress
		case "fail":
			done.Status = jobs.StatusFailed
		}
		// The caller's own write, already applied: recognised. (Fail's
		// failure code is the same in every recorded request.)
		recognised := s.G == in.G && s.Owner == in.AttemptID && s.V == in.V+1 && s == done
		if recognised {
			return out.Kind == "ok" && out.State == s, s
		}
		switch out.Kind {
		case "ok":
			ok := s.Status == jobs.StatusRunning && s.G == in.G && s.V == in.V && s.Owner == in.AttemptID
			return ok && out.State == done, done
		case "stale":
			ok := s.G != in.G || (!final && (s.Status != jobs.StatusRunning || s.V != in.V || s.Owner != in.AttemptID))
			return ok && out.G == s.G && out.V == s.V && out.Status == s.Status, s
		case "final":
			return s.G == in.G && final && out.Status == s.Status, s
		}
		return false, s
	case "nudge":
		// The caller's own nudge, already applied: recognised. (Every
		// recorded nudge has the same reason.)
		if !final && s.Nudged && s.G == in.G && s.V == in.V+1 {
			return out.Kind == "ok" && out.State == s, s
		}
		current := s.G == in.G && s.V == in.V
		switch out.Kind {
		case "ok":
			next := s
			next.V, next.Nudged = s.V+1, true
			ok := current && (s.Status == jobs.StatusPending || (s.Status == jobs.StatusRunning && s.Until < in.NowHi))
			return ok && out.State == next, next
		case "stale":
			return !current && out.G == s.G && out.V == s.V && out.Status == s.Status, s
		case "final":
			return current && final && out.Status == s.Status, s
		case "held":
			ok := current && s.Status == jobs.StatusRunning && s.Until >= in.NowLo &&
				out.Owner == s.Owner && out.G == s.G && out.Until == s.Until
			return ok, s
		}
		return false, s
	}
	return false, s
}
