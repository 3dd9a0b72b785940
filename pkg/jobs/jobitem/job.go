package jobitem

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fifoworker/fifoworker/internal/base/ids"
)

// Status is where a job is in its life: pending → running → completed,
// failed or cancelled. The last three are final: nothing changes a final job.
type Status string

// The statuses of a job.
const (
	StatusPending   Status = "pending"
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Final reports whether no transition leaves s.
func (s Status) Final() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Job is one item of the Jobs table. Times have millisecond precision, the
// precision they are stored with.
type Job struct {
	ID       string
	IntentID string // the client's idempotency key
	Tenant   string
	Status   Status
	// Generation is the current authorised processing generation: 0 before
	// the first claim, +1 on every claim, takeover and cancellation.
	Generation int64
	// Version is 0 at creation and +1 on every transition; the outbox id
	// derives from it.
	Version        int64
	LeaseOwner     string    // attempt id of the generation's holder (kept after the job ends)
	LeaseExpiresAt time.Time // zero before the first claim
	Result         Result    // zero unless completed
	Progress       int64     // items processed by the current generation
	Outbox         Message   // what the last transition emitted
	Spec           map[string]string
	Error          Failure   // zero unless failed or cancelled
	CreatedAt      time.Time //
	UpdatedAt      time.Time //
	ExpiresAt      time.Time // TTL, stored in epoch seconds; zero until the job is final
	// History is how the job got where it is: its last MaxHistory
	// transitions, creation included while it is among them, oldest
	// first. It is bounded, so the item stays small (attempt ids are left
	// out). Items written before it existed have none, or only the
	// transitions since.
	History []Transition
}

// MaxHistory is the most transitions a job item keeps in History.
const MaxHistory = 20

// Transition is one entry of a job's History: the state one write left.
// Which transition it was follows from its neighbour before it (a claim
// raises the generation; a renewal keeps status and generation; a nudge
// keeps a pending job pending at its generation; a takeover raises the
// generation of a running job whose lease ran out).
type Transition struct {
	Version    int64
	Status     Status
	Generation int64
	At         time.Time // when it was written, to the millisecond
	// Event is the type of the message the transition wrote to the outbox
	// (MessageRun for a creation and a nudge, EventStarted for a claim or a
	// takeover, EventProgress for a renewal, ...). It tells apart what the
	// other fields cannot: a renewal from the nudge of a running job whose
	// lease ran out (both keep it running at its generation). Empty in an
	// entry built without it; jobs.Describe then infers what it can.
	Event string
}

// Result is an accepted candidate object.
type Result struct {
	Key    string // S3 key of the candidate
	SHA256 string // lower-case hex
	Size   int64
}

// Failure says why a job failed or was cancelled.
type Failure struct {
	Code    string
	Message string
}

// Message is the command or event a transition wrote into the item's outbox
// attribute. The relay publishes it from the table's stream; the message body
// is built from it, the new image (snapshot) and the old image (delta).
type Message struct {
	ID      string            // OutboxID(job id, Version): the SQS deduplication id
	Type    string            // MessageRun, EventStarted, ...
	Version int64             // the job version that emitted it
	Payload map[string]string // the transition's own facts, see the Payload* keys
}

// Message types. The command is emitted by creation, an event by every
// later transition, so versions 1, 2, ... of a job each have exactly one
// event and a consumer can detect a gap. The one transition after creation
// whose outbox holds a command is the nudge (jobs.Store.Nudge): the relay
// publishes its version twice, as the command and as the event
// EventRequeued, so the events stay gapless.
const (
	MessageRun     = "job.run"       // command: run the job (version 0, and every nudge)
	EventStarted   = "job.started"   // a claim or a takeover
	EventProgress  = "job.progress"  // a renewal
	EventCompleted = "job.completed" // an accepted result
	EventFailed    = "job.failed"    // a failure, or a takeover beyond the recovery policy
	EventCancelled = "job.cancelled"
	// EventRequeued is the event the relay publishes for a nudge's version,
	// next to its run command; no item's outbox holds it.
	EventRequeued = "job.requeued"
)

// Payload keys.
const (
	PayloadAttemptID         = "attempt_id"          // the attempt whose claim, renewal or failure made the transition (an accept's is the job's LeaseOwner)
	PayloadPreviousAttemptID = "previous_attempt_id" // takeover: whose lease expired
	// PayloadResultKey was the accepted result's key in an accept's
	// payload. An accept writes no payload now (the key is the item's
	// result_key): only an item completed before may carry it.
	//
	// Deprecated: read Job.Result.Key.
	PayloadResultKey = "result_key"
	PayloadCode      = "code"
	PayloadReason    = "reason"
)

// OutboxID is the id of the message emitted by version v of a job, for
// example "job-42/v3". It is unique per job and deterministic, so a
// re-published message deduplicates.
func OutboxID(jobID string, version int64) string {
	return jobID + "/v" + strconv.FormatInt(version, 10)
}

// ValidateID reports whether id can be a job id: 1 to 128 characters from
// [A-Za-z0-9_-]. Job ids become parts of S3 keys and FIFO group ids, and the
// rule keeps them apart from the table's intent markers ("intent#…").
func ValidateID(id string) error {
	if p := ids.Problem(id); p != "" {
		return fmt.Errorf("%w: job id %q %s: ids are [A-Za-z0-9_-]{1,128}", ErrInvalid, id, p)
	}
	return nil
}

// ErrInvalid is the error of a malformed request; nothing was sent. Every
// store's refusal of a malformed request matches it (jobs.ErrInvalid is
// it).
var ErrInvalid = errors.New("invalid request")
