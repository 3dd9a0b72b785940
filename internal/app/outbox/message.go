package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fifoworker/fifoworker/internal/base/checksum"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// ErrMalformed is wrapped by every decoding error: the body can never
// become valid, so a consumer treats it as permanent (fifo.Permanent).
var ErrMalformed = errors.New("outbox: malformed message")

// MaxBody is the largest message body the decoders accept. Every body the
// relay writes is far smaller; SQS's own limit is 256 KiB.
const MaxBody = 64 << 10

// Command is the body of a job.run message on the commands queue. Its
// group is the job id and its deduplication id the command id.
type Command struct {
	Type      string    `json:"type"`       // jobitem.MessageRun
	CommandID string    `json:"command_id"` // the outbox id of the version that issued it, e.g. "job-42/v0"
	JobID     string    `json:"job_id"`
	IntentID  string    `json:"intent_id"`
	Tenant    string    `json:"tenant"`
	Version   int64     `json:"version"` // the job version that issued the command
	IssuedAt  time.Time `json:"issued_at"`
}

// Event is the body of a message on the events queue: the snapshot of the
// job after the transition of Version and the change of its progress since
// the previous version. Its group is the job id and its deduplication id
// the event id.
type Event struct {
	Type       string         `json:"type"`     // jobitem.EventStarted, ...
	EventID    string         `json:"event_id"` // jobitem.OutboxID(JobID, Version)
	JobID      string         `json:"job_id"`
	Tenant     string         `json:"tenant"`
	Version    int64          `json:"version"`
	Generation int64          `json:"generation"`
	Status     jobitem.Status `json:"status"`
	Progress   int64          `json:"progress"`
	// Delta is Progress minus the previous version's progress. A takeover
	// restarts the count, so a delta can be negative; the sum of a job's
	// deltas is always its current progress.
	Delta      int64     `json:"delta"`
	ResultKey  string    `json:"result_key,omitempty"`
	ResultSize int64     `json:"result_size,omitempty"`
	ErrorCode  string    `json:"error_code,omitempty"`
	OccurredAt time.Time `json:"occurred_at"`
}

// Kind says which queue or topic a message belongs on.
type Kind int

// The two queues (or topics) the relay writes to.
const (
	KindCommand Kind = iota + 1
	KindEvent
)

func (k Kind) String() string {
	switch k {
	case KindCommand:
		return "command"
	case KindEvent:
		return "event"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Message is one message the relay publishes, on any transport.
type Message struct {
	Kind            Kind
	Type            string // the body's type: jobitem.MessageRun for a command, the event's type (job.started, ...)
	OutboxID        string // jobitem.OutboxID(JobID, Version), e.g. "job-42/v3": the body's command or event id
	GroupID         string // the job id: the FIFO message group, the Kafka record key
	DeduplicationID string // the outbox id, shortened by DedupID past SQS's 128 characters
	Body            []byte
	JobID           string
	Version         int64
}

// eventRequeued is the event of a nudge: a transition after creation that
// issues a fresh run command. The relay publishes it beside the command so
// that every version from 1 on has exactly one event and the events queue
// stays gapless for the consumers that check versions.
const eventRequeued = "job.requeued"

// FromTransition builds the messages a transition emitted: cur is the job
// after it (the stream's new image), prev the job before it (the old image;
// nil for a creation). A creation emits its run command; every later
// transition emits its event, and a nudge (a later run command) both the
// command and a job.requeued event of the same version. No messages and no
// error: cur carries no message (an item that is not a job).
func FromTransition(cur *jobitem.Job, prev *jobitem.Job) ([]Message, error) {
	out := cur.Outbox
	if out.ID == "" {
		return nil, nil
	}
	if out.Version != cur.Version || out.ID != jobitem.OutboxID(cur.ID, cur.Version) {
		return nil, fmt.Errorf("outbox: job %s v%d carries message %q of version %d", cur.ID, cur.Version, out.ID, out.Version)
	}
	var msgs []Message
	eventType := out.Type
	if out.Type == jobitem.MessageRun {
		cmd, err := encode(KindCommand, out.Type, cur, Command{
			Type: out.Type, CommandID: out.ID, JobID: cur.ID, IntentID: cur.IntentID, Tenant: cur.Tenant,
			Version: cur.Version, IssuedAt: cur.UpdatedAt.UTC(),
		})
		if err != nil || cur.Version == 0 {
			return []Message{cmd}, err
		}
		msgs = append(msgs, cmd)
		eventType = eventRequeued
	}
	var before int64
	if prev != nil {
		before = prev.Progress
	}
	ev, err := encode(KindEvent, eventType, cur, Event{
		Type: eventType, EventID: out.ID, JobID: cur.ID, Tenant: cur.Tenant,
		Version: cur.Version, Generation: cur.Generation, Status: cur.Status,
		Progress: cur.Progress, Delta: cur.Progress - before,
		ResultKey: cur.Result.Key, ResultSize: cur.Result.Size, ErrorCode: cur.Error.Code,
		OccurredAt: cur.UpdatedAt.UTC(),
	})
	return append(msgs, ev), err
}

func encode(kind Kind, typ string, cur *jobitem.Job, body any) (Message, error) {
	m := Message{Kind: kind, Type: typ, OutboxID: cur.Outbox.ID, GroupID: cur.ID, DeduplicationID: DedupID(cur.Outbox.ID),
		JobID: cur.ID, Version: cur.Version}
	var err error
	if m.Body, err = json.Marshal(body); err != nil {
		return Message{}, fmt.Errorf("outbox: encode %s: %w", cur.Outbox.ID, err)
	}
	return m, nil
}

// DecodeCommand decodes and checks a command body.
func DecodeCommand(body string) (Command, error) {
	var c Command
	if err := decode(body, &c); err != nil {
		return Command{}, err
	}
	switch {
	case c.Type != jobitem.MessageRun:
		return Command{}, fmt.Errorf("%w: command type %q is not %q", ErrMalformed, c.Type, jobitem.MessageRun)
	case jobitem.ValidateID(c.JobID) != nil:
		return Command{}, fmt.Errorf("%w: %w", ErrMalformed, jobitem.ValidateID(c.JobID))
	case c.CommandID != jobitem.OutboxID(c.JobID, c.Version):
		return Command{}, fmt.Errorf("%w: command id %q is not job %s's message of version %d", ErrMalformed, c.CommandID, c.JobID, c.Version)
	case c.Tenant == "":
		return Command{}, fmt.Errorf("%w: command %s has no tenant", ErrMalformed, c.CommandID)
	case !validTenant(c.Tenant):
		return Command{}, fmt.Errorf("%w: command %s: %s", ErrMalformed, c.CommandID, tenantRule)
	}
	return c, nil
}

// DecodeEvent decodes and checks an event body.
func DecodeEvent(body string) (Event, error) {
	var e Event
	if err := decode(body, &e); err != nil {
		return Event{}, err
	}
	switch {
	case !strings.HasPrefix(e.Type, "job.") || e.Type == jobitem.MessageRun:
		return Event{}, fmt.Errorf("%w: event type %q is not a job event", ErrMalformed, e.Type)
	case jobitem.ValidateID(e.JobID) != nil:
		return Event{}, fmt.Errorf("%w: %w", ErrMalformed, jobitem.ValidateID(e.JobID))
	case e.Version < 1:
		return Event{}, fmt.Errorf("%w: event %q has version %d; events start at version 1", ErrMalformed, e.EventID, e.Version)
	case e.EventID != jobitem.OutboxID(e.JobID, e.Version):
		return Event{}, fmt.Errorf("%w: event id %q is not job %s's message of version %d", ErrMalformed, e.EventID, e.JobID, e.Version)
	case e.Tenant == "":
		return Event{}, fmt.Errorf("%w: event %s has no tenant", ErrMalformed, e.EventID)
	case !validTenant(e.Tenant):
		return Event{}, fmt.Errorf("%w: event %s: %s", ErrMalformed, e.EventID, tenantRule)
	case e.Progress < 0:
		return Event{}, fmt.Errorf("%w: event %s has negative progress %d", ErrMalformed, e.EventID, e.Progress)
	case e.Generation < 0 || e.ResultSize < 0:
		return Event{}, fmt.Errorf("%w: event %s has a negative generation or result size", ErrMalformed, e.EventID)
	}
	switch e.Status {
	case jobitem.StatusPending, jobitem.StatusRunning, jobitem.StatusCompleted, jobitem.StatusFailed, jobitem.StatusCancelled:
	default:
		return Event{}, fmt.Errorf("%w: event %s has unknown status %q", ErrMalformed, e.EventID, e.Status)
	}
	return e, nil
}

// tenantRule is the rule the job store holds every tenant to (jobs.Store
// refuses any other with jobitem.ErrInvalid, and so does the projection's
// store): the relay only ever writes such a tenant. A body with another
// would be refused by the store on every receive, as if that could pass;
// the decoders refuse it for good instead.
const tenantRule = "a tenant is 1 to 256 bytes of UTF-8 without control characters"

func validTenant(s string) bool {
	return s != "" && len(s) <= 256 && utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// decode reads exactly one JSON object of known fields: a body with unknown
// fields or trailing data was not written by the relay.
func decode(body string, v any) error {
	if len(body) > MaxBody {
		return fmt.Errorf("%w: body of %d bytes is over %d", ErrMalformed, len(body), MaxBody)
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: data after the JSON object", ErrMalformed)
	}
	return nil
}

// DedupID returns id if SQS accepts it as a deduplication id (at most 128
// characters), or else a prefix of it followed by a SHA-256 of the whole,
// which stays unique and deterministic.
func DedupID(id string) string {
	const limit = 128
	if len(id) <= limit {
		return id
	}
	sum := checksum.SHA256Hex([]byte(id))
	return id[:limit-1-len(sum)] + "~" + sum
}
