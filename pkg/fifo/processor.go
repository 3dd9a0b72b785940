package fifo

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// Handler processes one message. It returns nil when the message is done and
// may be deleted, an error to have it received again, or Permanent(err) when
// receiving it again cannot help.
type Handler func(ctx context.Context, msg events.SQSMessage) error

// Processor runs SQS batches through a Handler, one lane per message group.
// It is safe for concurrent use; with p, err := fifo.New(fifo.Config{Handler: h}),
// lambda.Start(p.Process) is a complete FIFO consumer.
type Processor struct {
	// cfg is the validated Config with its defaults filled in; DeadLetter
	// points to the processor's own copy.
	cfg Config
	// lanes runs the batches' lanes (Concurrency, the deadline margin and
	// the response reserve).
	lanes *lanes.Engine
}

// New returns a Processor with cfg. It fails with an error wrapping
// ErrInvalidConfig, naming the field, when cfg does not validate.
func New(cfg Config) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.DeadLetter != nil {
		dl := *cfg.DeadLetter // the caller's may change after New
		cfg.DeadLetter = &dl
	}
	engine, err := lanes.New(lanes.Config{
		Concurrency:        cfg.Concurrency,
		DeadlineMargin:     cfg.DeadlineMargin,
		ResponseReserve:    cfg.ResponseReserve,
		Now:                cfg.Now,
		Permanent:          IsPermanent,
		StopOnFirstFailure: cfg.StopOnFirstFailure,
		Name:               "fifo",
		Item:               "message",
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Processor{cfg: cfg, lanes: engine}, nil
}

// Process handles the batch and returns the messages to receive again.
// It returns an error only for an invalid batch (see ErrInvalidBatch);
// Lambda then retries the whole batch.
func (p *Processor) Process(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	b, err := p.newBatch(ctx, ev.Records)
	if err != nil {
		lanes.LogContained(ctx, p.cfg.Logger, slog.LevelError, "fifo: batch refused", requestAttr(ctx), slog.Int("records", len(ev.Records)), slog.Any("error", err))
		return events.SQSEventResponse{}, err
	}
	b.Run(ctx)
	return b.response(), nil
}

const groupAttribute = "MessageGroupId"

// pending marks a message no lane has decided yet. Only a handler that
// called runtime.Goexit can leave one behind; the rest of its lane then
// counts as skipped after a failure.
const pending = lanes.Pending

// batch is one batch's messages on the lane engine's Batch, which runs
// them (b is its lanes.Items) and holds their results.
type batch struct {
	lanes.Batch
	p       *Processor
	records []events.SQSMessage
	// noCause[i]: message i was dead-lettered without the
	// DeadLetterAttribute, for want of room among its attributes (nil
	// without a DeadLetter).
	noCause []bool

	// held is the quarantine's view of the batch (Config.Quarantine), and
	// heldErr the error that kept the batch from reading it.
	held    QuarantineView
	heldErr error
}

func (p *Processor) newBatch(ctx context.Context, records []events.SQSMessage) (*batch, error) {
	n := len(records)
	if n > 0 {
		if err := checkBatch(records); err != nil {
			return nil, err
		}
	}
	b := &batch{p: p, records: records}
	log := p.cfg.Logger
	if log != nil && n > 0 {
		// A logger that panics here keeps logging without the request id,
		// where each of its panics is contained too.
		_ = lanes.Guard(PanicInLogger, func() { log = log.With(requestAttr(ctx)) })
	}
	bc := lanes.BatchConfig{Logger: log, DeadLetter: p.cfg.DeadLetter != nil, Metrics: p.cfg.Metrics != nil, Quarantine: p.cfg.Quarantine != nil}
	p.lanes.Begin(&b.Batch, b, n, bc)
	if p.cfg.DeadLetter != nil {
		b.noCause = make([]bool, n)
	}
	b.Plan = p.lanes.Plan(n, func(i int) (string, bool) {
		group := records[i].Attributes[groupAttribute]
		return group, group != ""
	})
	return b, nil
}

// checkBatch refuses a batch Lambda's event source mapping never delivers:
// a record without a message id, a message id twice, records from
// different queues.
func checkBatch(records []events.SQSMessage) error {
	ids := make(map[string]int, len(records))
	arn := records[0].EventSourceARN
	for i := range records {
		rec := &records[i]
		switch prev, dup := ids[rec.MessageId]; {
		case rec.MessageId == "":
			return &InvalidBatchError{Index: i, Reason: "record has no message id"}
		case dup:
			return &InvalidBatchError{Index: i, MessageID: rec.MessageId, Reason: fmt.Sprintf("duplicate message id (also record %d)", prev)}
		case rec.EventSourceARN != arn:
			return &InvalidBatchError{Index: i, MessageID: rec.MessageId,
				Reason: fmt.Sprintf("records from different queues (%q and %q)", arn, rec.EventSourceARN)}
		}
		ids[rec.MessageId] = i
	}
	return nil
}

func requestAttr(ctx context.Context) slog.Attr {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return slog.String("aws_request_id", lc.AwsRequestID)
	}
	return slog.Attr{}
}

// Handle calls the handler with message i (lanes.Items).
func (b *batch) Handle(ctx context.Context, i int) error { return b.p.cfg.Handler(ctx, b.records[i]) }

// Quarantined reports whether message i's lane runs under the quarantine
// (lanes.Items).
func (b *batch) Quarantined(i int) bool { return b.quarantined(i) }

// DeadLetter sends message i, which failed permanently because of cause,
// to the dead-letter queue (lanes.Items).
func (b *batch) DeadLetter(ctx context.Context, i int, cause error) error {
	withCause, err := b.p.cfg.DeadLetter.send(ctx, &b.records[i], cause, b.p.cfg.Now())
	b.noCause[i] = err == nil && !withCause
	return err
}

// AppendAttrs appends the attributes that name message i in its log line
// (lanes.Items).
func (b *batch) AppendAttrs(attrs []slog.Attr, i int) []slog.Attr {
	msg := &b.records[i]
	return append(attrs,
		slog.String("message_id", msg.MessageId),
		slog.String("group_id", msg.Attributes[groupAttribute]),
		slog.Int("receive_count", receiveCount(msg)),
	)
}

// Warn logs, before message i's line, that it was dead-lettered without
// its cause (lanes.Warner).
func (b *batch) Warn(ctx context.Context, log *slog.Logger, i int) {
	if b.Results[i].Outcome != DeadLettered || !b.noCause[i] || !log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	msg := &b.records[i]
	log.LogAttrs(ctx, slog.LevelWarn, "fifo: dead-lettered without its cause: the message already has 10 attributes",
		slog.String("message_id", msg.MessageId), slog.String("sequence_number", msg.Attributes["SequenceNumber"]),
		slog.String("attribute", DeadLetterAttribute))
}

func (b *batch) response() events.SQSEventResponse {
	failures := []events.SQSBatchItemFailure{}
	for i := range b.Results {
		if !b.Results[i].Outcome.Acknowledged() {
			failures = append(failures, events.SQSBatchItemFailure{ItemIdentifier: b.records[i].MessageId})
		}
	}
	return events.SQSEventResponse{BatchItemFailures: failures}
}

func receiveCount(msg *events.SQSMessage) int {
	n, _ := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"])
	return n
}

// ReportMetrics calls the metrics hook with the batch's metrics
// (lanes.Reporter; lanes.Batch.Report guards it).
func (b *batch) ReportMetrics(took time.Duration) {
	m := BatchMetrics{Messages: make([]MessageMetrics, len(b.records)), Lanes: b.Plan.Lanes(), Duration: took}
	for i := range b.records {
		msg, r := &b.records[i], &b.Results[i]
		m.Messages[i] = MessageMetrics{
			MessageID:    msg.MessageId,
			GroupID:      msg.Attributes[groupAttribute],
			ReceiveCount: receiveCount(msg),
			Outcome:      r.Outcome,
			Wait:         r.Wait,
			Duration:     r.Duration,
		}
	}
	b.p.cfg.Metrics(m)
}
