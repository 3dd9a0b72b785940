package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// showLimit is the most parked messages a group's page shows.
const showLimit = 500

type holdsPage struct {
	Queue string
	Holds []holdRow
}

type holdRow struct {
	quarantine.HoldRecord
	Href string
}

type groupPage struct {
	Queue   string
	Hold    quarantine.HoldRecord
	Next    string // the sequence number of the oldest parked message
	Items   []parkedRow
	Limited bool // more are parked than the page shows
	CanAct  bool // actions are allowed, and the group has parked messages
	// NoRedrive and NoDiscard say why that action cannot work on this
	// group ("" it can): the page then offers it not and says why.
	NoRedrive string
	NoDiscard string
	Redrive   string
	Discard   string // discard every parked message
}

type parkedRow struct {
	quarantine.Parked
	Seq     string // its sequence number as SQS writes it
	Discard string // its own discard's confirmation page
}

// queueOf is the queue the path names and its quarantine; it answers a
// request whose queue is unknown or has none.
func (c *Console) queueOf(w http.ResponseWriter, r *http.Request) (Queue, bool) {
	name := r.PathValue("queue")
	for _, q := range c.cfg.Queues {
		if q.Name == name {
			if q.Quarantine == nil {
				c.fail(w, r, http.StatusNotFound, fmt.Sprintf("Queue %s has no quarantine.", name))
				return q, false
			}
			return q, true
		}
	}
	c.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no queue %q here.", name))
	return Queue{}, false
}

func groupHref(queue, group string) string {
	return "/quarantine/" + url.PathEscape(queue) + "/" + url.PathEscape(group)
}

func (c *Console) holds(w http.ResponseWriter, r *http.Request) {
	q, ok := c.queueOf(w, r)
	if !ok {
		return
	}
	holds, err := q.Quarantine.List(r.Context())
	if err != nil {
		c.sourceFailed(w, r, "list the holds of "+q.Name, err)
		return
	}
	p := holdsPage{Queue: q.Name}
	for _, h := range holds {
		p.Holds = append(p.Holds, holdRow{HoldRecord: h, Href: groupHref(q.Name, h.Group)})
	}
	c.render(w, r, http.StatusOK, "holds", "Held groups of "+q.Name, "q:"+q.Name, p)
}

func (c *Console) group(w http.ResponseWriter, r *http.Request) {
	q, ok := c.queueOf(w, r)
	if !ok {
		return
	}
	g := r.PathValue("group")
	h, items, err := q.Quarantine.Show(r.Context(), g, quarantine.StatusParked, showLimit+1)
	if err != nil {
		c.operatorFailed(w, r, q.Name, g, "show", err)
		return
	}
	limited := len(items) > showLimit
	items = items[:min(len(items), showLimit)]
	base := groupHref(q.Name, g)
	p := groupPage{Queue: q.Name, Hold: h, Next: quarantine.SeqNumber(h.Next), Limited: limited,
		CanAct:    c.cfg.AllowActions && len(items) > 0 && h.State != quarantine.StateReleased,
		NoRedrive: q.NoRedrive, NoDiscard: noDiscard(q, h),
		Redrive: base + "/redrive", Discard: base + "/discard"}
	for _, it := range items {
		seq := quarantine.SeqNumber(it.Sequence)
		p.Items = append(p.Items, parkedRow{Parked: it, Seq: seq, Discard: base + "/discard?" + url.Values{"seq": {seq}}.Encode()})
	}
	c.render(w, r, http.StatusOK, "group", "Group "+g+" on "+q.Name, "q:"+q.Name, p)
}

// drainingReason says why a draining group's messages cannot be
// discarded, as the operator (quarantine.Operator.Discard) refuses it.
func drainingReason(group string, epoch int64) string {
	return fmt.Sprintf("group %q is draining under epoch %d: a redriven copy may be running; discard once it is held again or released", group, epoch)
}

// noDiscard says why a discard cannot work on q's hold h, "" if it can.
func noDiscard(q Queue, h quarantine.HoldRecord) string {
	switch {
	case q.NoDiscard != "":
		return q.NoDiscard
	case h.State == quarantine.StateDraining:
		return drainingReason(h.Group, h.Epoch)
	}
	return ""
}

// cannotRedrive answers a redrive q cannot do (403, saying why).
func (c *Console) cannotRedrive(w http.ResponseWriter, r *http.Request, q Queue) bool {
	if q.NoRedrive == "" {
		return false
	}
	c.fail(w, r, http.StatusForbidden, "Nothing was done: "+q.NoRedrive+".")
	return true
}

// cannotDiscard answers a discard q cannot do (403) or h refuses now
// (draining: 409), saying why.
func (c *Console) cannotDiscard(w http.ResponseWriter, r *http.Request, q Queue, h quarantine.HoldRecord) bool {
	why := noDiscard(q, h)
	switch {
	case why == "":
		return false
	case q.NoDiscard != "":
		c.fail(w, r, http.StatusForbidden, "Nothing was discarded: "+why+".")
	default:
		c.fail(w, r, http.StatusConflict, "Nothing was discarded: "+why+".")
	}
	return true
}

// operatorFailed answers an operator's error in the operator's words: a
// group that is not held, or a message that is not parked, is 404, a hold
// that changed 409.
func (c *Console) operatorFailed(w http.ResponseWriter, r *http.Request, queue, group, op string, err error) {
	switch {
	case errors.Is(err, quarantine.ErrNoHold):
		c.fail(w, r, http.StatusNotFound, fmt.Sprintf("Group %q is not held on %s (the queue's page shows the groups that are).", group, queue))
	case errors.Is(err, quarantine.ErrNotParked):
		c.fail(w, r, http.StatusNotFound, err.Error())
	case errors.Is(err, quarantine.ErrConflict):
		c.fail(w, r, http.StatusConflict, err.Error())
	default:
		c.sourceFailed(w, r, op+" group "+group+" on "+queue, err)
	}
}

// confirmPage asks the operator to confirm one action.
type confirmPage struct {
	Action string // redrive, discard
	Queue  string
	Group  string
	// Form is what the form is bound to: the hold as the page read it.
	Form    postedAction
	Text    string // exactly what will happen
	Post    string
	CSRF    string
	Back    string
	TypeIDs bool // the operator types the group id (discard)
}

type reportPage struct {
	Queue  string
	Group  string
	Action string
	Lines  []string
	State  string
	Back   string
}

// maxReportLines is the most lines an action's report carries in its
// URL, its summary included: a discard of 500 messages archives 500 keys.
const maxReportLines = 20

// archivedLines are the lines of a discard's report beneath its summary:
// every archive key when they fit (maxReportLines-1), else as many as fit
// with a last line that counts the rest.
func archivedLines(keys []string) []string {
	listed := keys
	if room := maxReportLines - 1; len(keys) > room {
		listed = keys[:room-1]
	}
	lines := make([]string, 0, len(listed)+1)
	for _, k := range listed {
		lines = append(lines, "Archived under "+k)
	}
	if more := len(keys) - len(listed); more > 0 {
		lines = append(lines, fmt.Sprintf("And %d more archived under quarantine-archive/.", more))
	}
	return lines
}

func (c *Console) confirmRedrive(w http.ResponseWriter, r *http.Request) {
	q, ok := c.queueOf(w, r)
	if !ok {
		return
	}
	g := r.PathValue("group")
	if c.cannotRedrive(w, r, q) {
		return
	}
	h, _, err := q.Quarantine.Show(r.Context(), g, quarantine.StatusParked, 1)
	if err != nil {
		c.operatorFailed(w, r, q.Name, g, "show", err)
		return
	}
	base, form := groupHref(q.Name, g), shownAs("redrive", "", h)
	c.render(w, r, http.StatusOK, "confirm", "Redrive "+g, "q:"+q.Name, confirmPage{
		Action: "redrive", Queue: q.Name, Group: g, Form: form, Post: base + "/redrive", Back: base, CSRF: c.csrf(q.Name, g, form),
		Text: fmt.Sprintf("Redrive group %s on %s: begin epoch %d of its hold (now %s, %d parked) and send its parked messages back to the queue, oldest first, one at a time. The group is released once every copy has been processed; a copy that fails again holds it again.",
			g, q.Name, h.Epoch+1, h.State, h.Parked),
	})
}

// postedHold holds group g for an action's POST (c.acting: a second
// action while one runs is refused, 409) and reads its hold: a form shown
// under another epoch than the hold's now is refused (409), so a replayed
// or stale form does nothing. Once it accepts, the caller calls release
// when its action is done.
func (c *Console) postedHold(w http.ResponseWriter, r *http.Request, q Queue, g string, p postedAction) (h quarantine.HoldRecord, release func(), ok bool) {
	release, ok = c.acting.take(q.Name, g)
	if !ok {
		c.fail(w, r, http.StatusConflict, fmt.Sprintf(
			"Nothing was done: an action on this group is running: wait for it, then reload. Group %s on %s is being redriven or discarded by this console now.", g, q.Name))
		return h, nil, false
	}
	h, ok = c.checkHold(w, r, q, g, p)
	if !ok {
		release()
		return h, nil, false
	}
	return h, release, true
}

// checkHold reads group g's hold and refuses (409) a form shown under
// another epoch than the hold's now, or, a discard-all's, with another
// last parked message or count (shownAs).
func (c *Console) checkHold(w http.ResponseWriter, r *http.Request, q Queue, g string, p postedAction) (quarantine.HoldRecord, bool) {
	h, _, err := q.Quarantine.Show(r.Context(), g, quarantine.StatusParked, 1)
	if err != nil {
		c.operatorFailed(w, r, q.Name, g, "show", err)
		return h, false
	}
	if now := shownAs(p.Action, p.Seq, h); now != p {
		c.fail(w, r, http.StatusConflict, fmt.Sprintf(
			"Nothing was done: the group changed since this page was shown: reload. The form was shown under epoch %d%s; group %s on %s is now %s under epoch %d, %d parked.",
			p.Epoch, shownParked(p), g, q.Name, h.State, h.Epoch, h.Parked))
		return h, false
	}
	return h, true
}

// shownParked says, for a discard-all's form, what was parked when it
// was shown.
func shownParked(p postedAction) string {
	if !p.BindsShown() {
		return ""
	}
	return fmt.Sprintf(" with %s parked, the last %s", p.Parked, quarantine.SeqNumber(p.Through))
}

func (c *Console) redrive(w http.ResponseWriter, r *http.Request) {
	q, ok := c.queueOf(w, r)
	if !ok {
		return
	}
	g := r.PathValue("group")
	p, ok := c.checkPost(w, r, "redrive", q.Name, g)
	if !ok || c.cannotRedrive(w, r, q) {
		return
	}
	_, release, ok := c.postedHold(w, r, q, g, p)
	if !ok {
		return
	}
	defer release()
	rep, err := c.runRedrive(r.Context(), q, g)
	switch {
	case err != nil && rep.Epoch == 0:
		c.operatorFailed(w, r, q.Name, g, "redrive", err) // no epoch begun: nothing was done
		return
	case err != nil:
		c.cfg.Logger.ErrorContext(r.Context(), "console: redrive stopped", "queue", q.Name, "group_id", g, "epoch", rep.Epoch, "sent", rep.Sent, "error", err)
		c.fail(w, r, http.StatusBadGateway, fmt.Sprintf(
			"The redrive of group %s on %s stopped: %d sent under epoch %d before it stopped (%v). The group is draining; redrive again to resume: a new epoch sends every message still parked.",
			g, q.Name, rep.Sent, rep.Epoch, err))
		return
	}
	c.cfg.Logger.InfoContext(r.Context(), "console: redrive", "queue", q.Name, "group_id", g, "epoch", rep.Epoch, "sent", rep.Sent, "state", rep.State)
	lines := []string{fmt.Sprintf("%d sent under epoch %d; now %s, %d parked.", rep.Sent, rep.Epoch, rep.State, rep.Parked)}
	if rep.Cause != "" {
		lines = append(lines, "Cause: "+rep.Cause)
	}
	c.answered(w, r, q.Name, g, "redrive", string(rep.State), lines)
}

func (c *Console) confirmDiscard(w http.ResponseWriter, r *http.Request) {
	q, ok := c.queueOf(w, r)
	if !ok {
		return
	}
	g, seq := r.PathValue("group"), r.URL.Query().Get("seq")
	if !c.validSeq(w, r, seq) {
		return
	}
	h, _, err := q.Quarantine.Show(r.Context(), g, quarantine.StatusParked, 1)
	if err != nil {
		c.operatorFailed(w, r, q.Name, g, "show", err)
		return
	}
	if c.cannotDiscard(w, r, q, h) {
		return
	}
	what := fmt.Sprintf("every parked message of group %s (%d)", g, h.Parked)
	if seq != "" {
		what = fmt.Sprintf("parked message %s of group %s", seq, g)
	}
	base, form := groupHref(q.Name, g), shownAs("discard", seq, h)
	c.render(w, r, http.StatusOK, "confirm", "Discard from "+g, "q:"+q.Name, confirmPage{
		Action: "discard", Queue: q.Name, Group: g, Form: form, Post: base + "/discard", Back: base,
		CSRF: c.csrf(q.Name, g, form), TypeIDs: true,
		Text: fmt.Sprintf("Discard %s on %s: each is archived first (as JSON with its body, under quarantine-archive/), then dropped for good; it will never run. A group with nothing left parked is released.", what, q.Name),
	})
}

func (c *Console) discard(w http.ResponseWriter, r *http.Request) {
	q, ok := c.queueOf(w, r)
	if !ok {
		return
	}
	g := r.PathValue("group")
	p, ok := c.checkPost(w, r, "discard", q.Name, g)
	if !ok || !c.validSeq(w, r, p.Seq) {
		return
	}
	if typed := strings.TrimSpace(r.PostFormValue("group_id")); typed != g {
		c.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Not confirmed: the group id typed, %q, is not %q. Nothing was discarded.", typed, g))
		return
	}
	h, release, ok := c.postedHold(w, r, q, g, p)
	if !ok {
		return
	}
	defer release()
	if c.cannotDiscard(w, r, q, h) {
		return
	}
	keys, h, err := q.Quarantine.Discard(r.Context(), g, p.Seq)
	if err != nil {
		c.operatorFailed(w, r, q.Name, g, "discard", err)
		return
	}
	c.cfg.Logger.InfoContext(r.Context(), "console: discard", "queue", q.Name, "group_id", g, "seq", p.Seq, "discarded", len(keys))
	lines := append([]string{fmt.Sprintf("%d discarded; now %s, %d parked.", len(keys), h.State, h.Parked)}, archivedLines(keys)...)
	c.answered(w, r, q.Name, g, "discard", string(h.State), lines)
}

// runRedrive redrives group g of q apart from the request: a browser
// that goes away (its request's context ends) does not cut the sends
// short; RedriveTimeout bounds it instead. The console counts it as in
// flight until it returns (Console.InFlight).
func (c *Console) runRedrive(ctx context.Context, q Queue, g string) (quarantine.RedriveReport, error) {
	done := c.inFlight.begin(fmt.Sprintf("a redrive of group %s on %s", g, q.Name))
	defer done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.RedriveTimeout)
	defer cancel()
	return q.Quarantine.Redrive(ctx, g, false)
}

// answered sends the browser, after an action's POST, to the GET page of
// its report (303): reloading that page shows the report again and does
// not post the form again.
// The report's URL is signed (reportSig): the report page shows only a
// report this console made.
func (c *Console) answered(w http.ResponseWriter, r *http.Request, queue, group, action, state string, lines []string) {
	v := url.Values{"action": {action}, "state": {state}, "line": lines, "sig": {c.reportSig(queue, group, action, state, lines)}}
	http.Redirect(w, r, groupHref(queue, group)+"/report?"+v.Encode(), http.StatusSeeOther)
}

// reportSig signs a report's URL, under this run's token as the CSRF
// tokens are: its queue, group, action, state and every line, so a link
// crafted elsewhere (a fake "released") is not shown as the console's.
func (c *Console) reportSig(queue, group, action, state string, lines []string) string {
	return c.sign("report", append([]string{queue, group, action, state}, lines...)...)
}

// report shows an action's report, from the URL answered made; a URL it
// did not make (unsigned, or any part changed) is refused (400).
func (c *Console) report(w http.ResponseWriter, r *http.Request) {
	q, ok := c.queueOf(w, r)
	if !ok {
		return
	}
	g, v := r.PathValue("group"), r.URL.Query()
	action, state, lines := v.Get("action"), v.Get("state"), v["line"]
	if !equal(v.Get("sig"), c.reportSig(q.Name, g, action, state, lines)) {
		c.fail(w, r, http.StatusBadRequest, "Nothing to show: this report link was not made by this console (or not by this run of it). The group's page shows the group as it is now.")
		return
	}
	title := "Redrive of " + g
	if action == "discard" {
		title = "Discard from " + g
	}
	c.render(w, r, http.StatusOK, "report", title, "q:"+q.Name, reportPage{
		Queue: q.Name, Group: g, Action: action, Lines: lines, State: state, Back: groupHref(q.Name, g),
	})
}

// validSeq answers a request whose seq is not "" (every parked message)
// nor a sequence number.
func (c *Console) validSeq(w http.ResponseWriter, r *http.Request, seq string) bool {
	if seq == "" {
		return true
	}
	if _, err := quarantine.SeqKey(seq); err != nil {
		c.fail(w, r, http.StatusBadRequest, fmt.Sprintf("seq %q is not a sequence number: %v", seq, err))
		return false
	}
	return true
}
