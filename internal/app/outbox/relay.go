package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// Sink publishes messages for a Relay on one transport: SQS FIFO queues
// (internal/app/outbox/sqsout) or Kafka topics
// (internal/app/outbox/kafkaout).
type Sink interface {
	// Send publishes one round of a stream batch: at most one message per
	// job, each job's previous message of the batch already published.
	// Every message carries trace, the invocation's X-Ray trace header
	// ("" for none). It returns one error per message, in order: nil for a
	// message the transport acknowledged, the reason for one it did not. A
	// message whose outcome is unknown counts as not published: the retry
	// publishes it again, and its outbox id tells the copy.
	Send(ctx context.Context, msgs []Message, trace string) []error
}

// Relay publishes the Jobs table's outbox: each stream record of a
// transition becomes its messages, sent through a Sink, per job in version
// order.
type Relay struct {
	sink Sink
	log  *slog.Logger
}

// ErrInvalidConfig is wrapped by the error a relay's constructor returns
// for a configuration that cannot work (NewRelay's, and the transports'
// in sqsout and kafkaout); the message names the field.
var ErrInvalidConfig = errors.New("outbox: invalid configuration")

// RelayConfig configures a Relay.
type RelayConfig struct {
	// Sink sends the messages. Required.
	Sink Sink
	// Logger logs what could not be published. Default (nil): nothing is
	// logged.
	Logger *slog.Logger
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c RelayConfig) Validate() error {
	if c.Sink == nil {
		return fmt.Errorf("%w: Sink is nil", ErrInvalidConfig)
	}
	return nil
}

// NewRelay returns a relay that publishes through cfg.Sink, or an error
// wrapping ErrInvalidConfig.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Relay{sink: cfg.Sink, log: log}, nil
}

// Handle publishes a stream batch (a Lambda DynamoDB stream event with
// ReportBatchItemFailures). Per job, messages are published strictly in
// record order, and a message is never handed to the sink before the
// job's previous one was acknowledged: each Send holds at most one message
// per job, and a failed message stops its job's later ones. The response
// names the first record, in stream order, that was not published, so
// Lambda retries the batch from there; a message published again is
// recognised by its outbox id (SQS also drops it within its 5-minute
// deduplication window).
//
// A record that cannot be decoded fails the same way (so does one without
// the images the stream's NEW_AND_OLD_IMAGES view gives: an insert or a
// modification without its new image, a modification without its old
// one): it is retried, and with bisecting and a retry limit it ends on the
// mapping's on-failure destination. Records of items that are not jobs
// (intent markers) and deletions (TTL) carry no message and are skipped.
func (r *Relay) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	lanes, order, firstBad := r.collect(ev.Records)
	sent := r.publish(ctx, ev.Records, lanes, order)
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
	cur, err := jobitem.FromStreamImage(rec.Change.NewImage)
	if errors.Is(err, jobitem.ErrNotJob) {
		return nil, nil // an intent marker
	}
	if err != nil {
		return nil, err
	}
	var prev *jobitem.Job
	if len(rec.Change.OldImage) > 0 {
		old, err := jobitem.FromStreamImage(rec.Change.OldImage)
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

// publish hands the sink each lane's messages through Publish and returns
// how many of each lane were acknowledged.
func (r *Relay) publish(ctx context.Context, records []events.DynamoDBEventRecord, lanes map[string][]laneEntry, order []string) map[string]int {
	msgs := make([][]Message, len(order))
	for i, id := range order {
		for _, e := range lanes[id] {
			msgs[i] = append(msgs[i], e.msg)
		}
	}
	counts := Publish(ctx, r.sink, msgs, func(lane, n int, err error) {
		e := &lanes[order[lane]][n]
		r.log.Warn("outbox: message not published; the batch will be retried from its record",
			"job_id", e.msg.JobID, "version", e.msg.Version, "kind", e.msg.Kind.String(),
			"sequence_number", records[e.index].Change.SequenceNumber, "error", err)
	})
	sent := make(map[string]int, len(order))
	for i, id := range order {
		sent[id] = counts[i]
	}
	return sent
}

// Publish hands sink each lane's messages (a lane is one job's, in version
// order) in rounds of one message per lane, so that a Send carries many
// jobs but never two messages of one job, and a job's message goes out only
// after the sink acknowledged its previous one. A lane stops at its first
// failure, or at a round the sink answered with another number of results
// than it had messages; failed(lane, n, err) hears of each stopped lane's
// n-th message. It returns how many messages of each lane were
// acknowledged: a prefix of the lane. Every message carries the X-Ray
// trace header of ctx's invocation. The table stream's Relay and the
// PostgreSQL outbox's relay (internal/app/outbox/pgsource) both publish
// through it.
func Publish(ctx context.Context, sink Sink, lanes [][]Message, failed func(lane, n int, err error)) []int {
	trace := traceHeader(ctx)
	sent := make([]int, len(lanes))
	stopped := make([]bool, len(lanes))
	for {
		// Fresh slices each round: a sink may keep what it was handed.
		var round []int // the lanes in the round
		var msgs []Message
		for i, lane := range lanes {
			if !stopped[i] && sent[i] < len(lane) {
				round = append(round, i)
				msgs = append(msgs, lane[sent[i]])
			}
		}
		if len(round) == 0 {
			return sent
		}
		errs := sink.Send(ctx, msgs, trace)
		for k, i := range round {
			err := errNoResult
			if len(errs) == len(round) {
				err = errs[k]
			}
			if err == nil {
				sent[i]++
				continue
			}
			stopped[i] = true
			failed(i, sent[i], err)
		}
	}
}

// errNoResult stands for the outcome of a message whose sink answered a
// round with another number of results than it had messages: unknown, so
// not published.
var errNoResult = errors.New("outbox: the sink gave no result for the message")
