package console

import (
	"fmt"
	"time"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The timeline is laid out here, in Go, and drawn by job.html's SVG
// template: every label reaches the SVG through html/template, escaped.

// Timeline geometry, in SVG user units.
const (
	tlWidth   = 960
	tlLeft    = 110 // room for the rows' names
	tlRight   = 30
	tlJobY    = 64  // the job's row
	tlCandY   = 124 // the candidates' row
	tlAxisY   = 160
	tlHeight  = 195
	tlBandTop = tlJobY - 12
	tlBandH   = 24
)

type timeline struct {
	Width, Height  int
	Left, Right    int
	JobY, CandY    int
	AxisY          int
	BandTop, BandH int
	Bands          []band
	Events         []mark
	Candidates     []mark
	Ticks          []tick
}

// band is the span of one generation, from its claim to the next
// generation's (or the last thing drawn).
type band struct {
	X, W  int
	Label string
	Odd   bool // every other band is shaded apart, so two that touch show their border
}

// mark is one event or one candidate on the time axis.
type mark struct {
	X, Y   int
	LabelY int
	Kind   string // a CSS class: the step's kind, or the candidate's mark
	RanOut bool   // the step followed the end of a lease
	Label  string // short, shown
	Title  string // long, the tooltip
}

type tick struct {
	X      int
	Label  string
	Anchor string // start, middle or end: the axis's ends keep their text inside
}

// candidateMark is what the timeline reads of a candidate.
type candidateMark struct {
	At                time.Time
	Generation        int64
	Mark, Description string
}

// layoutTimeline places steps and candidates on one time axis.
func layoutTimeline(steps []step, cands []candidateMark) timeline {
	tl := timeline{Width: tlWidth, Height: tlHeight, Left: tlLeft, Right: tlWidth - tlRight, JobY: tlJobY, CandY: tlCandY,
		AxisY: tlAxisY, BandTop: tlBandTop, BandH: tlBandH}
	var first, last time.Time
	see := func(t time.Time) {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	for _, s := range steps {
		see(s.At)
	}
	for _, c := range cands {
		see(c.At)
	}
	if first.IsZero() {
		return tl
	}
	span := last.Sub(first)
	if span <= 0 {
		span = time.Second
	}
	x := func(t time.Time) int {
		return tlLeft + int(float64(t.Sub(first))/float64(span)*float64(tl.Right-tlLeft))
	}
	tl.Bands = bands(steps, x, x(last))
	for i, s := range steps {
		tl.Events = append(tl.Events, mark{X: x(s.At), Y: tlJobY, LabelY: tlJobY - 18 - 12*(i%3), Kind: s.Kind, RanOut: s.LeaseRanOut,
			Label: shortLabel(s), Title: fmt.Sprintf("v%d %s, %s", s.Version, utc(s.At), s.What)})
	}
	for i, c := range cands {
		tl.Candidates = append(tl.Candidates, mark{X: x(c.At), Y: tlCandY, LabelY: tlCandY + 20 + 11*(i%2), Kind: c.Mark,
			Label: fmt.Sprintf("g%d %s", c.Generation, c.Mark), Title: fmt.Sprintf("%s, %s", utc(c.At), c.Description)})
	}
	tl.Ticks = []tick{{X: tlLeft, Label: utc(first), Anchor: "start"}, {X: tl.Right, Label: utc(last), Anchor: "end"}}
	if span > 2*time.Second {
		mid := first.Add(span / 2)
		tl.Ticks = append(tl.Ticks, tick{X: x(mid), Label: utc(mid), Anchor: "middle"})
	}
	return tl
}

// bands are the generations' spans.
func bands(steps []step, x func(time.Time) int, end int) []band {
	var out []band
	for i, s := range steps {
		if s.Generation == 0 || (i > 0 && steps[i-1].Generation == s.Generation) {
			continue
		}
		to := end
		for _, n := range steps[i+1:] {
			if n.Generation != s.Generation {
				to = x(n.At)
				break
			}
		}
		out = append(out, band{X: x(s.At), W: max(to-x(s.At), 2), Label: fmt.Sprintf("g%d", s.Generation), Odd: len(out)%2 == 1})
	}
	return out
}

func shortLabel(s step) string {
	switch s.Step.Kind {
	case jobs.StepClaimed, jobs.StepTakenOver:
		return fmt.Sprintf("%s g%d", s.Step.Kind, s.Generation)
	case jobs.StepRenewed:
		return "" // renewals are most of a long history: dots, each with its tooltip
	}
	return string(s.Step.Kind)
}
