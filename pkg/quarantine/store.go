package quarantine

import (
	"context"
	"time"
)

// Store keeps holds and parked messages. MemoryStore, DynamoStore and
// PostgresStore implement it, held to the same conformance suite
// (quarantinetest).
//
// Every write is conditional and idempotent where a retry can repeat it:
// parking a message already parked, under any status, changes nothing;
// Done and Discard land only on a message still parked.
type Store interface {
	// Read returns, in one consistent read, the holds of groups (released
	// ones included; a group without a record is absent) and the parked
	// messages named by keys, whatever their status (absent when there is
	// none).
	Read(ctx context.Context, queue string, groups []string, keys []ItemKey) (map[string]HoldRecord, map[ItemKey]Parked, error)

	// Park writes the messages of items not parked yet (all of one group,
	// in sequence order) and counts them in the group's hold, in one
	// atomic write; Next becomes the oldest of them if it is older than
	// Next (and Next is known: a hold with messages parked and no Next
	// keeps none until BeginRedrive reads it). With hold set, the hold
	// becomes held with cause, whatever its state (a new hold on a
	// released record starts a new range); without it, a missing or
	// released hold is created held, and a held or draining one keeps its
	// state. A park with no new message never creates a hold: on a missing
	// or released one it writes nothing and returns it as it is. A message
	// written gets queue, group, StatusParked, and now as ParkedAt and
	// UpdatedAt, whatever items say. It returns the hold afterwards.
	Park(ctx context.Context, queue, group string, items []Parked, hold bool, cause string, now time.Time) (HoldRecord, error)

	// Done marks the parked message seq done and uncounts it, releasing
	// the hold when it was the last: one atomic write, so a hold is never
	// left draining with nothing parked. It writes only while the hold is
	// draining at epoch or a later one (a redrive begun while the copy
	// ran: the copy ran in its order all the same, and the later epoch's
	// copy of the message is then dropped as done, rather than run a
	// second time) and seq is the hold's Next, the oldest message parked;
	// otherwise it writes nothing and returns ErrNoHold (no hold, or a
	// released one) or ErrConflict (held, an epoch not yet begun, or seq
	// not the oldest message parked: a later one, or one not parked at
	// all), checked in that order. The hold it returns names the oldest
	// message still parked as Next.
	Done(ctx context.Context, queue, group, seq string, epoch int64, now time.Time) (HoldRecord, error)

	// Discard marks the parked message seq discarded and uncounts it,
	// releasing the hold when it was the last, whether the hold is held or
	// draining (under any epoch), and moves Next on when seq was Next. It
	// writes nothing and returns ErrNoHold when the group has no hold or a
	// released one, ErrNotParked when seq is not parked.
	Discard(ctx context.Context, queue, group, seq string, now time.Time) (HoldRecord, error)

	// BeginRedrive raises a held or draining hold's epoch and makes it
	// draining, or released at once when nothing is parked, and returns
	// it. A hold with messages parked that names no Next (a record written
	// before holds kept one) gets the oldest of them as Next. It writes
	// nothing and returns ErrNoHold when the group has no hold or a
	// released one.
	BeginRedrive(ctx context.Context, queue, group string, now time.Time) (HoldRecord, error)

	// Failed records the failed attempt f of the group's record
	// f.Sequence in its hold's Attempts, and returns them afterwards: one
	// more when they counted that record, else its first (its cause
	// clipped to 1024 bytes). A group without a record gets a released
	// one, which holds nothing and only counts; a hold's other fields, its
	// state and UpdatedAt included, are left as they are. It may write on
	// the condition that the hold is as f.Seen and f.SeenHeld say, and
	// then reads it anew and writes again when it is not: one conditional
	// write, no read, when the caller's read is current. A write whose
	// answer was lost and that the client sent again may count the attempt
	// twice (the record is then parked an attempt early, never late).
	Failed(ctx context.Context, queue, group string, f Failure, now time.Time) (Attempts, error)

	// Hold returns the group's hold, released ones included (ErrNoHold when
	// there is no record).
	Hold(ctx context.Context, queue, group string) (HoldRecord, error)

	// Messages returns up to limit (every one when limit ≤ 0) of the
	// group's messages with status (all statuses when empty) whose
	// sequence key is greater than after, in sequence order.
	Messages(ctx context.Context, queue, group string, status Status, after string, limit int) ([]Parked, error)

	// Holds returns the queue's holds that are not released, oldest first.
	Holds(ctx context.Context, queue string) ([]HoldRecord, error)
}
