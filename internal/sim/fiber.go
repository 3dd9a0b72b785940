package sim

// A fiber is one invocation running on a goroutine of its own, handed
// control by the scheduler and giving it back: exactly one of the
// scheduler and the fibers runs at any moment, so the interleaving is the
// scheduler's, drawn from the seed, and a seed replays exactly. A task that
// stalls suspends its invocation's fiber (yield); the scheduler goes on
// with other steps, other invocations of the same queue among them, and
// resumes the fiber later, at a step it picks (resume), past its
// deadline, its lease or its message's visibility timeout as time has
// passed meanwhile.
type fiber struct {
	name   string
	inv    *invocation // the invocation the fiber runs
	resume chan struct{}
	// event carries true when the fiber suspends itself, false when it
	// has ended.
	event chan bool
}

// spawn runs f, the work of inv, as a fiber until it ends or suspends
// itself.
func (w *World) spawn(inv *invocation, f func()) {
	fb := &fiber{name: inv.id, inv: inv, resume: make(chan struct{}), event: make(chan bool)}
	outer := w.current
	w.current = fb
	go func() {
		f()
		fb.event <- false
	}()
	w.await(fb)
	w.current = outer
}

// await waits until fb suspends itself or ends.
func (w *World) await(fb *fiber) {
	if suspended := <-fb.event; suspended {
		w.suspended = append(w.suspended, fb)
	}
}

// yield suspends the running fiber until the scheduler resumes it. It
// returns false, having suspended nothing, outside a fiber.
func (w *World) yield() bool {
	fb := w.current
	if fb == nil {
		return false
	}
	w.logf("  %s suspended", fb.name)
	fb.event <- true
	<-fb.resume
	return true
}

// resumeOne resumes a suspended fiber (a random one, or the oldest) and
// waits until it ends or suspends itself again.
func (w *World) resumeOne(random bool) bool {
	if len(w.suspended) == 0 {
		return false
	}
	i := 0
	if random {
		i = w.rng.IntN(len(w.suspended))
	}
	fb := w.suspended[i]
	w.suspended = append(w.suspended[:i], w.suspended[i+1:]...)
	outer := w.current
	w.current = fb
	w.logf("%s resumed", fb.name)
	fb.resume <- struct{}{}
	w.await(fb)
	w.current = outer
	return true
}
