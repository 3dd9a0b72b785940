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
// An entry is one string, EncodeTransition's: the status's and the
// event's letters, then the version, the generation and the time in epoch
// milliseconds, in base 36, dot-separated: "rs7.2.mg5pcq3f" is version 7,
// running at generation 2 by a claim or takeover (job.started). Base 36
// keeps a time in 8 characters (until 2059), so that MaxHistory entries
// and their names cost under 400 bytes of a DynamoDB item.

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

// The letters of an entry's status and event.
var (
	statusLetters = map[Status]byte{
		StatusPending: 'p', StatusRunning: 'r', StatusCompleted: 'c', StatusFailed: 'f', StatusCancelled: 'x',
	}
	eventLetters = map[string]byte{
		"": '-', MessageRun: 'n', EventStarted: 's', EventProgress: 'p',
		EventCompleted: 'c', EventFailed: 'f', EventCancelled: 'x',
	}
)

// EncodeTransition renders t as its slot holds it. An event the item
// never holds (EventRequeued, or one unknown) is left out, as none.
func EncodeTransition(t Transition) string {
	e, ok := eventLetters[t.Event]
	if !ok {
		e = eventLetters[""]
	}
	var b strings.Builder
	b.Grow(16)
	b.WriteByte(statusLetters[t.Status])
	b.WriteByte(e)
	b.WriteString(strconv.FormatInt(t.Version, 36))
	b.WriteByte('.')
	b.WriteString(strconv.FormatInt(t.Generation, 36))
	b.WriteByte('.')
	b.WriteString(strconv.FormatInt(t.At.UnixMilli(), 36))
	return b.String()
}

// DecodeTransition reads an entry EncodeTransition wrote.
func DecodeTransition(s string) (Transition, error) {
	var t Transition
	if len(s) < 2 {
		return t, fmt.Errorf("entry %q: too short", s)
	}
	for st, l := range statusLetters {
		if l == s[0] {
			t.Status = st
		}
	}
	found := false
	for ev, l := range eventLetters {
		if l == s[1] {
			t.Event, found = ev, true
		}
	}
	parts := strings.Split(s[2:], ".")
	if t.Status == "" || !found || len(parts) != 3 {
		return t, fmt.Errorf("entry %q: want <status><event><version>.<generation>.<epoch ms>", s)
	}
	var n [3]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 36, 64)
		if err != nil || (i < 2 && v < 0) {
			return t, fmt.Errorf("entry %q: %q is not a base-36 number it can hold", s, p)
		}
		n[i] = v
	}
	t.Version, t.Generation, t.At = n[0], n[1], time.UnixMilli(n[2]).UTC()
	return t, nil
}

// decodeHistory reads the slots of the item d reads, top-level (a
// DynamoDB item) and in the history map (a PostgreSQL row), oldest
// first. An entry that does not decode, or sits in another version's
// slot, is an error naming its attribute.
func decodeHistory[V any](d *ddbattr.Decoder[V]) ([]Transition, error) {
	h, err := historySlots(d, "")
	if err != nil {
		return nil, err
	}
	if hd, ok := d.OptMap(AttrHistory); ok {
		more, err := historySlots(hd, AttrHistory+".")
		if err != nil {
			return nil, err
		}
		h = append(h, more...)
	}
	slices.SortFunc(h, func(a, b Transition) int { return cmp.Compare(a.Version, b.Version) })
	return h, nil
}

func historySlots[V any](d *ddbattr.Decoder[V], path string) ([]Transition, error) {
	var h []Transition
	for i := range int64(MaxHistory) {
		slot := HistorySlot(i)
		s := d.OptString(slot)
		if s == "" {
			continue
		}
		t, err := DecodeTransition(s)
		if err != nil {
			return nil, fmt.Errorf("attribute %s%s: %w", path, slot, err)
		}
		if HistorySlot(t.Version) != slot {
			return nil, fmt.Errorf("attribute %s%s: entry %q: version %d belongs in slot %s", path, slot, s, t.Version, HistorySlot(t.Version))
		}
		h = append(h, t)
	}
	return h, nil
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
