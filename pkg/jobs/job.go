package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fifoworker/fifoworker/internal/base/ids"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// The job's model is the job item's (pkg/jobs/jobitem, which a reader of
// the table's stream imports alone: it reaches no DynamoDB client); this
// package gives it under its own names. Each is documented there.
type (
	// Status is where a job is in its life: pending → running → completed,
	// failed or cancelled. The last three are final (Status.Final).
	Status = jobitem.Status
	// Job is one item of the Jobs table.
	Job = jobitem.Job
	// Transition is one entry of a job's History.
	Transition = jobitem.Transition
	// Result is an accepted candidate object.
	Result = jobitem.Result
	// Failure says why a job failed or was cancelled.
	Failure = jobitem.Failure
	// Message is the command or event a transition wrote into the item's
	// outbox attribute.
	Message = jobitem.Message
)

// The statuses of a job.
const (
	StatusPending   = jobitem.StatusPending
	StatusRunning   = jobitem.StatusRunning
	StatusCompleted = jobitem.StatusCompleted
	StatusFailed    = jobitem.StatusFailed
	StatusCancelled = jobitem.StatusCancelled
)

// Message types: the command version 0 and every nudge emit, and the
// events of the later transitions (jobitem's doc says which).
const (
	MessageRun     = jobitem.MessageRun
	EventStarted   = jobitem.EventStarted
	EventProgress  = jobitem.EventProgress
	EventCompleted = jobitem.EventCompleted
	EventFailed    = jobitem.EventFailed
	EventCancelled = jobitem.EventCancelled
	EventRequeued  = jobitem.EventRequeued
)

// Payload keys.
const (
	PayloadAttemptID         = jobitem.PayloadAttemptID
	PayloadPreviousAttemptID = jobitem.PayloadPreviousAttemptID
	// Deprecated: an accept writes no payload; read Job.Result.Key.
	PayloadResultKey = jobitem.PayloadResultKey //nolint:staticcheck // kept for the library's users
	PayloadCode      = jobitem.PayloadCode
	PayloadReason    = jobitem.PayloadReason
)

// Failure codes written by the package itself.
const (
	CodeRecoveryExhausted = "recovery_exhausted"
	CodeCancelled         = "cancelled"
)

// MaxHistory is the most transitions a job keeps in its History.
const MaxHistory = jobitem.MaxHistory

// OutboxID is the id of the message emitted by version v of a job, for
// example "job-42/v3" (jobitem.OutboxID).
func OutboxID(jobID string, version int64) string { return jobitem.OutboxID(jobID, version) }

// ValidateID reports whether id can be a job id: 1 to 128 characters from
// [A-Za-z0-9_-] (jobitem.ValidateID).
func ValidateID(id string) error { return jobitem.ValidateID(id) }

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
