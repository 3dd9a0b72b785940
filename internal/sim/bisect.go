package sim

import (
	"slices"
	"time"
)

// bisection is a batch BisectBatchOnFunctionError split, as pkg/localesm
// splits one: the spans left to run, in order, each run to its end
// (its records completed, or given up) before the next. Its partitions
// stay the batch's meanwhile: nothing else fetches them, and a retry of a
// span runs its records again, not a fresh fetch. A rebalance takes a
// partition out of it: its new owner fetches from the committed offset.
type bisection struct {
	todo [][]kpart // of each span, its partitions' records (kpart's p and recs)
}

// readySpans returns the bisections of m whose next span may run now:
// none of its partitions in flight or waiting to be retried.
func (m *mapping) readySpans(now time.Time) []*bisection {
	var out []*bisection
	for _, bs := range m.bisections {
		ready := true
		for _, sp := range bs.todo[0] {
			if m.inflight[sp.p] != nil || now.Before(m.retryAt[sp.p]) {
				ready = false
			}
		}
		if ready {
			out = append(out, bs)
		}
	}
	return out
}

// bisect splits the failed batch b's parts still owned, cur, in halves
// in place of the span it ran (or of the batch itself): a split uses up
// no retry, and the first half runs after the retry's wait.
func (w *World) bisect(m *mapping, b *kbatch, cur []kpart) {
	first, second := halves(cur)
	bs := b.split
	if bs == nil {
		bs = &bisection{todo: [][]kpart{nil}}
		m.bisections = append(m.bisections, bs)
	}
	bs.todo = append([][]kpart{first, second}, bs.todo[1:]...)
	m.resplit(bs)
	for _, kp := range cur {
		m.retryAt[kp.p] = w.clock.Now().Add(retryWait(m.failures[kp.p] + 1))
	}
	w.stats.Bisections++
	w.logf("  %s %s's batch is split in halves (BisectBatchOnFunctionError): %d then %d records", m.kind, b.inv.id, recordsIn(first), recordsIn(second))
}

// halves splits parts of two records or more as pkg/localesm's bisect
// does: each partition's first ⌊n/2⌋ records make the first half, the
// rest the second, so each partition's records stay in order across
// them; when each partition has one record, the first ⌊k/2⌋ partitions
// make the first half.
func halves(parts []kpart) (first, second []kpart) {
	for _, kp := range parts {
		half := len(kp.recs) / 2
		if half > 0 {
			a := kp
			a.recs = kp.recs[:half]
			first = append(first, a)
		}
		b := kp
		b.recs = kp.recs[half:]
		second = append(second, b)
	}
	if len(first) == 0 {
		k := len(parts) / 2
		first, second = parts[:k], parts[k:]
	}
	return first, second
}

func recordsIn(parts []kpart) int {
	n := 0
	for _, kp := range parts {
		n += len(kp.recs)
	}
	return n
}

// advanceSplit moves bisection bs on after its span ran: each partition's
// records the mapping committed past leave the span, and so does a
// partition a rebalance took; a span left empty is done. (A span whose
// partitions rebalances all took is gone already: the next one's
// partitions were not in the batch, and their committed offsets have not
// moved.)
func (m *mapping) advanceSplit(bs *bisection) {
	if len(bs.todo) == 0 {
		return
	}
	var left []kpart
	for _, sp := range bs.todo[0] {
		if m.split[sp.p] != bs {
			continue
		}
		c := m.group.Committed(sp.p)
		i := slices.IndexFunc(sp.recs, func(r *LogRecord) bool { return r.Offset >= c })
		if i >= 0 {
			sp.recs = sp.recs[i:]
			left = append(left, sp)
		}
	}
	bs.todo[0] = left
	m.resplit(bs)
}

// unsplit takes partition p out of whatever bisection holds it (a
// rebalance moved it).
func (m *mapping) unsplit(p int) {
	bs := m.split[p]
	if bs == nil {
		return
	}
	for i, sp := range bs.todo {
		bs.todo[i] = slices.DeleteFunc(slices.Clone(sp), func(kp kpart) bool { return kp.p == p })
	}
	m.resplit(bs)
}

// resplit drops bs's empty spans, and bs once none is left, and has bs
// hold exactly the partitions its spans still have.
func (m *mapping) resplit(bs *bisection) {
	bs.todo = slices.DeleteFunc(bs.todo, func(sp []kpart) bool { return len(sp) == 0 })
	for p, o := range m.split {
		if o == bs {
			delete(m.split, p)
		}
	}
	for _, sp := range bs.todo {
		for _, kp := range sp {
			m.split[kp.p] = bs
		}
	}
	if len(bs.todo) == 0 {
		m.bisections = slices.DeleteFunc(m.bisections, func(o *bisection) bool { return o == bs })
	}
}
