package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// SQSAPI is the part of the SQS client the relay calls.
type SQSAPI interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// maxBatch is SendMessageBatch's limit on entries.
const maxBatch = 10

// Relay publishes the Jobs table's outbox: each stream record of a
// transition becomes one message, commands to the commands queue and events
// to the events queue.
type Relay struct {
	api         SQSAPI
	commandsURL string
	eventsURL   string
	log         *slog.Logger
}

// ErrInvalidConfig is wrapped by the error NewRelay returns for a
// configuration that cannot work; the message names the field.
var ErrInvalidConfig = errors.New("outbox: invalid configuration")

// RelayConfig configures a Relay.
type RelayConfig struct {
	// Client is the SQS client. Required.
	Client SQSAPI
	// CommandsURL is the URL of the commands queue, a FIFO queue (its name
	// ends in ".fifo"). Required.
	CommandsURL string
	// EventsURL is the URL of the events queue, a FIFO queue. Required.
	EventsURL string
	// Logger logs what could not be published. Default (nil): nothing is
	// logged.
	Logger *slog.Logger
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c RelayConfig) Validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	case !strings.HasSuffix(c.CommandsURL, ".fifo"):
		return fmt.Errorf("%w: CommandsURL %q is not a FIFO queue's", ErrInvalidConfig, c.CommandsURL)
	case !strings.HasSuffix(c.EventsURL, ".fifo"):
		return fmt.Errorf("%w: EventsURL %q is not a FIFO queue's", ErrInvalidConfig, c.EventsURL)
	}
	return nil
}

// NewRelay returns a relay that sends commands to cfg.CommandsURL and
// events to cfg.EventsURL, or an error wrapping ErrInvalidConfig.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Relay{api: cfg.Client, commandsURL: cfg.CommandsURL, eventsURL: cfg.EventsURL, log: log}, nil
}

// Handle publishes a stream batch (a Lambda DynamoDB stream event with
// ReportBatchItemFailures). Per job, messages are sent strictly in record
// order, and a message is never sent before the job's previous one was
// accepted by SQS: each SendMessageBatch holds at most one message per job,
// and a failed message stops its job's later ones. The response names the
// first record, in stream order, that was not published, so Lambda retries
// the batch from there; a resend is deduplicated by SQS within 5 minutes
// and recognised by its id (the outbox id) beyond.
//
// A record that cannot be decoded fails the same way (so does one without
// the images the stream's NEW_AND_OLD_IMAGES view gives: an insert or a
// modification without its new image, a modification without its old
// one): it is retried, and with bisecting and a retry limit it ends on the
// mapping's on-failure destination. Records of items that are not jobs (intent markers) and
// deletions (TTL) carry no message and are skipped.
func (r *Relay) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	lanes, order, firstBad := r.collect(ev.Records)
	sent := r.publish(ctx, lanes, order, traceAttributes(traceHeader(ctx)))
	// The first record not published: the earliest of a decoding failure
	// and each job's first unsent message.
	fail := firstBad
	for _, id := range order {
		if n := sent[id]; n < len(lanes[id]) {
			if i := lanes[id][n].index; fail < 0 || i < fail {
				fail = i
			}
		}
	}
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	if fail >= 0 {
		resp.BatchItemFailures = append(resp.BatchItemFailures,
			events.DynamoDBBatchItemFailure{ItemIdentifier: ev.Records[fail].Change.SequenceNumber})
	}
	return resp, nil
}

// laneEntry is one record's message, waiting to be sent.
type laneEntry struct {
	index int // the record's position in the batch
	msg   Message
}

// collect turns records into per-job lanes in record order. firstBad is the
// index of the first record that could not be decoded, or -1.
func (r *Relay) collect(records []events.DynamoDBEventRecord) (lanes map[string][]laneEntry, order []string, firstBad int) {
	lanes = map[string][]laneEntry{}
	firstBad = -1
	// A record that cannot be decoded stops its job: a later version must
	// not go out before it (the retry resends from it). A record without a
	// readable key could be any job's, so it stops every job.
	stopped := map[string]bool{}
	stopAll := false
	for i := range records {
		rec := &records[i]
		key := recordKey(rec)
		msgs, err := r.messages(rec)
		if err != nil {
			r.log.Error("outbox: undecodable stream record", "sequence_number", rec.Change.SequenceNumber, "event_id", rec.EventID, "job_id", key, "error", err)
			if firstBad < 0 {
				firstBad = i
			}
			if key == "" {
				stopAll = true
			}
			stopped[key] = true
			continue
		}
		if len(msgs) == 0 {
			continue
		}
		id := msgs[0].JobID
		if stopAll || stopped[id] {
			continue
		}
		lane := lanes[id]
		if n := len(lane); n > 0 && lane[n-1].msg.Version >= msgs[0].Version {
			// A repeat of a record already in this batch, or an older
			// version: the job's messages go out in version order, once.
			continue
		}
		if lane == nil {
			order = append(order, id)
		}
		for _, m := range msgs {
			lane = append(lane, laneEntry{index: i, msg: m})
		}
		lanes[id] = lane
	}
	return lanes, order, firstBad
}

// recordKey is the job id in a record's key, or "".
func recordKey(rec *events.DynamoDBEventRecord) string {
	if k, ok := rec.Change.Keys["job_id"]; ok && k.DataType() == events.DataTypeString {
		return k.String()
	}
	return ""
}

// messages decodes one record into the messages its transition emitted.
func (r *Relay) messages(rec *events.DynamoDBEventRecord) ([]Message, error) {
	if rec.EventName == string(events.DynamoDBOperationTypeRemove) {
		return nil, nil // TTL
	}
	// An insert or a modification without the images the table's stream
	// gives (NEW_AND_OLD_IMAGES) cannot be published as it should: without
	// the new image the transition's message is unknown, and without the
	// old one a modification's delta and its repeat check are. Skipping it
	// would lose the message silently; failing it retries it and then hands
	// it to the on-failure destination.
	switch {
	case len(rec.Change.NewImage) == 0:
		return nil, fmt.Errorf("outbox: %s record without a new image: the stream's view type must be NEW_AND_OLD_IMAGES", rec.EventName)
	case rec.EventName == string(events.DynamoDBOperationTypeModify) && len(rec.Change.OldImage) == 0:
		return nil, fmt.Errorf("outbox: MODIFY record without an old image: the stream's view type must be NEW_AND_OLD_IMAGES")
	}
	cur, err := jobs.FromStreamImage(rec.Change.NewImage)
	if errors.Is(err, jobs.ErrNotJob) {
		return nil, nil // an intent marker
	}
	if err != nil {
		return nil, err
	}
	var prev *jobs.Job
	if len(rec.Change.OldImage) > 0 {
		old, err := jobs.FromStreamImage(rec.Change.OldImage)
		if err != nil {
			return nil, err
		}
		if old.Version == cur.Version {
			return nil, nil // not a transition: nothing was emitted
		}
		prev = &old
	}
	return FromTransition(&cur, prev)
}

// publish sends each lane's messages in order, one per job per round, and
// returns how many of each lane were accepted. A lane stops at its first
// failure. Every message carries the system attributes attrs.
func (r *Relay) publish(ctx context.Context, lanes map[string][]laneEntry, order []string, attrs map[string]types.MessageSystemAttributeValue) map[string]int {
	sent := make(map[string]int, len(lanes))
	stopped := map[string]bool{}
	for {
		var commands, evts []*laneEntry
		for _, id := range order {
			if n := sent[id]; !stopped[id] && n < len(lanes[id]) {
				e := &lanes[id][n]
				if e.msg.Kind == KindCommand {
					commands = append(commands, e)
				} else {
					evts = append(evts, e)
				}
			}
		}
		if len(commands)+len(evts) == 0 {
			return sent
		}
		for _, q := range []struct {
			url     string
			entries []*laneEntry
		}{{r.commandsURL, commands}, {r.eventsURL, evts}} {
			for start := 0; start < len(q.entries); start += maxBatch {
				chunk := q.entries[start:min(start+maxBatch, len(q.entries))]
				ok := r.send(ctx, q.url, chunk, attrs)
				for i, e := range chunk {
					if ok[i] {
						sent[e.msg.JobID]++
					} else {
						stopped[e.msg.JobID] = true
					}
				}
			}
		}
	}
}

// send sends one batch, each message with the system attributes attrs, and
// reports which entries SQS accepted.
func (r *Relay) send(ctx context.Context, url string, chunk []*laneEntry, attrs map[string]types.MessageSystemAttributeValue) []bool {
	ok := make([]bool, len(chunk))
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(url)}
	for i, e := range chunk {
		in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{
			Id:                      aws.String(strconv.Itoa(i)),
			MessageBody:             aws.String(string(e.msg.Body)),
			MessageGroupId:          aws.String(e.msg.GroupID),
			MessageDeduplicationId:  aws.String(e.msg.DeduplicationID),
			MessageSystemAttributes: attrs,
		})
	}
	out, err := r.api.SendMessageBatch(ctx, in)
	if err != nil {
		r.log.Warn("outbox: send failed; the batch will be retried from its first unsent record", "queue_url", url, "entries", len(chunk), "error", err)
		return ok
	}
	for _, s := range out.Successful {
		if i, err := strconv.Atoi(aws.ToString(s.Id)); err == nil && i >= 0 && i < len(ok) {
			ok[i] = true
		}
	}
	for _, f := range out.Failed {
		i, _ := strconv.Atoi(aws.ToString(f.Id))
		if i >= 0 && i < len(chunk) {
			r.log.Warn("outbox: message refused", "queue_url", url, "job_id", chunk[i].msg.JobID, "version", chunk[i].msg.Version,
				"code", aws.ToString(f.Code), "sender_fault", f.SenderFault, "error", aws.ToString(f.Message))
		}
	}
	return ok
}
