package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
// whose outbox holds a command is the nudge (Store.Nudge): the relay
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
	PayloadAttemptID         = "attempt_id"          // the attempt whose request made the transition
	PayloadPreviousAttemptID = "previous_attempt_id" // takeover: whose lease expired
	PayloadResultKey         = "result_key"
	PayloadCode              = "code"
	PayloadReason            = "reason"
)

// Failure codes written by the package itself.
const (
	CodeRecoveryExhausted = "recovery_exhausted"
	CodeCancelled         = "cancelled"
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

// validateAttemptID applies the job id rule to attempt ids: they become
// parts of candidate keys too.
func validateAttemptID(id string) error {
	if p := ids.Problem(id); p != "" {
		return fmt.Errorf("%w: attempt id %q %s: ids are [A-Za-z0-9_-]{1,128}", ErrInvalid, id, p)
	}
	return nil
}

// validateText accepts 1 to max bytes of printable UTF-8.
func validateText(what, s string, maxLen int) error {
	if s == "" || len(s) > maxLen || !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s must be 1 to %d bytes of UTF-8", ErrInvalid, what, maxLen)
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: %s contains a control character", ErrInvalid, what)
	}
	return nil
}

// DeriveJobID returns the job id Create uses when the request names none:
// a hash of tenant and intent, so a retried request proposes the same id.
func DeriveJobID(tenant, intentID string) string {
	return hashedJobID(tenant + "\x00" + intentID)
}

// SuccessorJobID returns the job id Create uses, when the request names
// none, for the new job of an intent whose marker outlived its job:
// previous is the id the marker names. Projections of a job id never
// expire, so the new job must not take the old job's id; and every retry
// over that marker derives the same successor, so concurrent retries race
// for one job and exactly one wins. A third incarnation is the successor
// of the second, so no incarnation repeats an earlier one's id while the
// marker remembers the intent. The input has two NUL separators, which
// neither tenants nor intents may contain, so no successor equals a
// DeriveJobID.
func SuccessorJobID(tenant, intentID, previous string) string {
	return hashedJobID(tenant + "\x00" + intentID + "\x00" + previous)
}

// hashedJobID is "job-" and 32 hex digits of the SHA-256 of s: a valid job
// id of fixed length whatever s is.
func hashedJobID(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "job-" + hex.EncodeToString(sum[:16])
}

// specHash is a digest of a spec that does not depend on map order; nil and
// empty specs hash alike.
func specHash(spec map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(spec)) {
		// Length prefixes make the encoding unambiguous.
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(spec[k]), spec[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ms truncates t to the stored precision.
func ms(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}
