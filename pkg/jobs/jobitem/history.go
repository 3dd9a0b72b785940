package jobitem

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/internal/base/ddbattr"
)

// A job's History is kept in MaxHistory slots, one per version modulo
// MaxHistory: the entry of version v in slot HistorySlot(v), written by
// the transition that made version v and overwritten, MaxHistory versions
// later, by the one that makes v+MaxHistory. So a write sets one slot
// without knowing the others: DynamoDB's fenced writes are sent without
// reading the item (pkg/jobs's transition.go), and cannot rewrite a list
// they have not read. A reader collects the slots and orders them by
// version.
//
// On a DynamoDB item each slot is a top-level string attribute, "h0" to
// "h19": an update sets a top-level attribute whether or not the item has
// it, where setting a path in a map the item lacks (an item written
// before the history existed) fails the whole write. In a PostgreSQL row
// the slots are the keys of one JSON object, the history column
// (AttrHistory), merged server-side by each transition's statement.
//
// An entry is one string, EncodeTransition's: a letter for its status
// and event, the time in epoch milliseconds (8 base-36 digits), the
// version and the generation (base 36, dot-separated): "smw1vyyds7.2" is
// version 7, running at generation 2 by a claim or a takeover
// (job.started), at 2026-11-04T09:00:10Z. It is that terse because a job
// item is near DynamoDB's 1 KB write unit already: MaxHistory entries and
// their names cost 290 to 350 bytes (more with the version's base-36
// digits, 350 at most below 36^4 versions), a normal life's four under 60
// (docs/ARCHITECTURE.md, "The history").

// AttrHistory is the PostgreSQL row's history column: a JSON object of
// slots (HistorySlot) to entries (EncodeTransition).
const AttrHistory = "history"

// historySlotPrefix begins every slot's name.
const historySlotPrefix = "h"

// HistorySlot is the slot of the entry of version v: "h" and v modulo
// MaxHistory.
func HistorySlot(v int64) string {
	return historySlotPrefix + strconv.FormatInt(v%MaxHistory, 10)
}

// kinds are an entry's letters: each stands for a status and the event
// of the transition that left it, the only pairs a store writes (a
// pending job's entry is a creation's or a nudge's, both MessageRun; a
// running one's a renewal's, a claim's or takeover's, or a requeue's).
// A status's first pair is the one of an entry whose event no store
// writes (EncodeTransition): for a running one a renewal's, as Describe
// reads a running entry without its event.
var kinds = []struct {
	letter byte
	status Status
	event  string
}{
	{'p', StatusPending, MessageRun},
	{'r', StatusRunning, EventProgress},
	{'s', StatusRunning, EventStarted},
	{'q', StatusRunning, MessageRun},
	{'c', StatusCompleted, EventCompleted},
	{'f', StatusFailed, EventFailed},
	{'x', StatusCancelled, EventCancelled},
}

// The time of an entry is epoch milliseconds in base 36, exactly
// timeDigits digits, zero-padded: 1970 to 2059. A time outside is written
// as the nearest one inside (stores write their clock's now).
const (
	timeDigits = 8
	maxTime    = 2821109907455 // 36^8 - 1 ms: 2059-05-25
)

// EncodeTransition renders t as its slot holds it: the letter of its
// status and event (an event the status's transitions do not write is
// written as the status's first in kinds: a running entry's as a
// renewal's, so it reads as Describe reads it without a round trip), the
// time, then the version and the generation, "s" + "mw1vyyds" + "7.2".
func EncodeTransition(t Transition) string {
	letter := byte(0)
	for _, k := range kinds {
		if k.status == t.Status && (letter == 0 || k.event == t.Event) {
			letter = k.letter
		}
	}
	if letter == 0 {
		letter = '?' // no status a job has: DecodeTransition refuses it
	}
	at := strconv.FormatInt(min(max(t.At.UnixMilli(), 0), maxTime), 36)
	var b strings.Builder
	b.Grow(1 + timeDigits + 4)
	b.WriteByte(letter)
	b.WriteString(strings.Repeat("0", timeDigits-len(at)))
	b.WriteString(at)
	b.WriteString(strconv.FormatInt(t.Version, 36))
	b.WriteByte('.')
	b.WriteString(strconv.FormatInt(t.Generation, 36))
	return b.String()
}

// DecodeTransition reads an entry EncodeTransition wrote.
func DecodeTransition(s string) (Transition, error) {
	var t Transition
	bad := func(why string) (Transition, error) {
		return Transition{}, fmt.Errorf("entry %q: %s: want <kind letter><%d base-36 digits of epoch ms><version>.<generation>", s, why, timeDigits)
	}
	if len(s) < 1+timeDigits+3 {
		return bad("too short")
	}
	for _, k := range kinds {
		if k.letter == s[0] {
			t.Status, t.Event = k.status, k.event
		}
	}
	if t.Status == "" {
		return bad("unknown kind letter")
	}
	v, g, ok := strings.Cut(s[1+timeDigits:], ".")
	if !ok {
		return bad("no generation")
	}
	var n [3]int64
	for i, p := range []string{s[1 : 1+timeDigits], v, g} {
		x, err := strconv.ParseUint(p, 36, 63)
		if err != nil {
			return bad(fmt.Sprintf("%q is not a base-36 number", p))
		}
		n[i] = int64(x)
	}
	t.At, t.Version, t.Generation = time.UnixMilli(n[0]).UTC(), n[1], n[2]
	return t, nil
}

// decodeHistory reads the slots of the item d reads, top-level (a
// DynamoDB item) and in the history map (a PostgreSQL row), oldest
// first: the entries of the item's last MaxHistory versions, version-19
// to version. An entry of an older version is one that a write without
// the history (a binary from before it, in a rolling deploy, a rollback
// or an old CLI) did not overwrite; one above the item's version was not
// written by its transitions. The history is diagnostic, so a slot that
// does not hold an entry of its own version (another type, a string
// EncodeTransition did not write, another version's entry) is skipped,
// not an error: the job stays readable, by the stores, the relay and the
// sweeper, with the rest of its history.
func decodeHistory[V any](d *ddbattr.Decoder[V], version int64) []Transition {
	h := historySlots(d, version)
	if hd, ok := d.LaxMap(AttrHistory); ok {
		h = append(h, historySlots(hd, version)...)
	}
	slices.SortFunc(h, func(a, b Transition) int { return cmp.Compare(a.Version, b.Version) })
	return h
}

func historySlots[V any](d *ddbattr.Decoder[V], version int64) []Transition {
	var h []Transition
	for i := range int64(MaxHistory) {
		slot := HistorySlot(i)
		s, ok := d.LaxString(slot)
		if !ok {
			continue
		}
		t, err := DecodeTransition(s)
		if err != nil || HistorySlot(t.Version) != slot || t.Version > version || t.Version <= version-MaxHistory {
			continue
		}
		h = append(h, t)
	}
	return h
}

// EncodeHistory is the slots of h, by name: a DynamoDB item's attributes,
// a PostgreSQL row's history object. Of two entries in one slot the later
// one stays, as a write over the slot leaves it.
func EncodeHistory(h []Transition) map[string]string {
	if len(h) == 0 {
		return nil
	}
	slots := make(map[string]string, min(len(h), MaxHistory))
	for _, t := range h {
		slots[HistorySlot(t.Version)] = EncodeTransition(t)
	}
	return slots
}
