package localesm

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoworker/fifoworker/internal/base/backoff"
)

// SQSAPI is the part of the SQS client an SQSMapping uses.
type SQSAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// Defaults of SQSConfig.
const (
	// DefaultSQSBatchSize is Lambda's default batch size for SQS, and the
	// most one ReceiveMessage returns.
	DefaultSQSBatchSize = 10
	// DefaultMaximumConcurrency is how many invocations run at once when
	// the configuration sets no bound: the five concurrent batches Lambda
	// starts an SQS mapping with.
	DefaultMaximumConcurrency = 5
	// DefaultPollWait is the ReceiveMessage long-poll wait. Lambda waits 20
	// seconds; a local mapping waits less so that tests see messages that
	// become visible again without delay.
	DefaultPollWait = time.Second
)

// SQSConfig configures an SQSMapping. Client, Invoker and QueueURL are
// required; the zero value of every other field selects its documented
// default.
type SQSConfig struct {
	// Client is the SQS client. Required.
	Client SQSAPI
	// Invoker runs the function. Required.
	Invoker Invoker
	// QueueURL is the queue to poll. Required.
	QueueURL string
	// BatchSize is the most messages per invocation, 1 to 10 (default 10).
	// Lambda allows up to 10,000 for standard queues with a batching window;
	// this mapping makes one ReceiveMessage call per batch, which returns at
	// most 10.
	BatchSize int
	// MaximumConcurrency bounds the invocations in flight, 2 to 1000 like
	// Lambda's ScalingConfig (default DefaultMaximumConcurrency). An
	// invoker that is a ConcurrencyLimiter lowers it to its own bound (RIE:
	// 1); SQSMapping.Concurrency reports the bound in force.
	MaximumConcurrency int
	// FunctionTimeout is the function's timeout (default
	// DefaultFunctionTimeout). Like Lambda, the mapping refuses a queue
	// whose visibility timeout is shorter.
	FunctionTimeout time.Duration
	// ReportBatchItemFailures enables partial batch responses
	// (FunctionResponseTypes: [ReportBatchItemFailures]).
	ReportBatchItemFailures bool
	// PollWait is the ReceiveMessage long-poll wait, a whole number of
	// seconds from 1s to 20s (default DefaultPollWait). Zero selects the
	// default, so short polling (a wait of 0) cannot be configured.
	PollWait time.Duration
	// FunctionARN is given to the function as InvokedFunctionArn (default
	// DefaultFunctionARN).
	FunctionARN string
	// Logger receives one record per batch (Info, Warn when it failed),
	// one per receive that withheld messages (Warn) and one per message
	// (Debug). Default: no logging.
	Logger *slog.Logger
	// OnBatch, when set, is called once each batch's outcome has been
	// applied (its deletes answered), before the batch lets go of its
	// message groups. So a group's results are reported in the order its
	// batches ran: a batch that took a group over is invoked only after
	// the OnBatch of the batch it took the group from has returned. It is
	// called from several goroutines at once (for batches of different
	// groups) and must not block for long: the batch's groups wait for it.
	OnBatch func(SQSBatchResult)
}

// SQSBatchResult describes one settled batch.
type SQSBatchResult struct {
	RequestID string
	Records   []events.SQSMessage // the event's records, in order; empty when nothing was invoked
	// Deleted are the ids of the messages this batch deleted, in batch
	// order: those whose delete SQS answered with success and was made
	// with the receipt handle of the message's latest receive. A message
	// the mapping received again before its delete landed is left out even
	// though SQS answered success: AWS documents that a DeleteMessage
	// without the most recent receipt handle succeeds but may leave the
	// message in the queue, and fauxqs always leaves it. Blind spot: a
	// receive SQS answered before the delete landed, whose answer arrives
	// here only after the delete's, cannot be seen; a message it returns
	// is listed though it was not deleted (at most one receive per
	// delete: the mapping's receives are sequential).
	Deleted []string
	// Withheld are the messages received with the batch but not invoked:
	// their group was in flight. Each such receive counts toward the
	// queue's maxReceiveCount (see the package documentation).
	Withheld []WithheldMessage
	Outcome  Outcome
	Err      error // why the batch failed, for failures
}

// WithheldMessage is a message an SQSMapping received but did not invoke
// because another invocation of the mapping held its message group.
type WithheldMessage struct {
	MessageID string
	GroupID   string
	// ReceiveCount is the message's ApproximateReceiveCount, this receive
	// included (0 when the queue did not report it). When it reaches the
	// queue's maxReceiveCount the message can be moved to the dead-letter
	// queue without ever having been invoked.
	ReceiveCount int
}

func (c SQSConfig) withDefaults() SQSConfig {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultSQSBatchSize
	}
	if c.MaximumConcurrency == 0 {
		c.MaximumConcurrency = DefaultMaximumConcurrency
	}
	if c.PollWait == 0 {
		c.PollWait = DefaultPollWait
	}
	functionDefaults(&c.FunctionTimeout, &c.FunctionARN, &c.Logger)
	return c
}

// Validate reports the first setting that cannot work, after defaults,
// wrapping ErrInvalidConfig.
func (c SQSConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	case c.QueueURL == "":
		return fmt.Errorf("%w: QueueURL is empty", ErrInvalidConfig)
	case c.BatchSize < 1 || c.BatchSize > 10:
		return fmt.Errorf("%w: BatchSize %d is outside [1, 10] (FIFO queues allow at most 10; one ReceiveMessage returns at most 10)", ErrInvalidConfig, c.BatchSize)
	case c.MaximumConcurrency < 2 || c.MaximumConcurrency > 1000:
		return fmt.Errorf("%w: MaximumConcurrency %d is outside [2, 1000]", ErrInvalidConfig, c.MaximumConcurrency)
	case c.PollWait < 0 || c.PollWait > 20*time.Second || c.PollWait%time.Second != 0:
		return fmt.Errorf("%w: PollWait %v is not a whole number of seconds in [1s, 20s] (zero selects the default, %v)", ErrInvalidConfig, c.PollWait, DefaultPollWait)
	}
	return validateCommon(c.Invoker, c.FunctionTimeout)
}

// SQSMapping polls an SQS queue and invokes a function with batches of its
// messages, as Lambda's SQS event source mapping does.
type SQSMapping struct {
	client      SQSAPI
	invoker     Invoker
	cfg         SQSConfig
	concurrency int // cfg.MaximumConcurrency, lowered to the invoker's bound
}

// NewSQSMapping returns a mapping from cfg.QueueURL to the function behind
// cfg.Invoker, or an error wrapping ErrInvalidConfig.
func NewSQSMapping(cfg SQSConfig) (*SQSMapping, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m := &SQSMapping{client: cfg.Client, invoker: cfg.Invoker, cfg: cfg, concurrency: cfg.MaximumConcurrency}
	if l, ok := cfg.Invoker.(ConcurrencyLimiter); ok {
		if n := l.MaxConcurrency(); n >= 1 && n < m.concurrency {
			m.concurrency = n
		}
	}
	return m, nil
}

// Concurrency is the most invocations the mapping runs at once: the
// configuration's MaximumConcurrency, or the invoker's MaxConcurrency when
// the invoker is a ConcurrencyLimiter with a lower bound. The mapping
// receives a batch only when one of these slots is free, so a batch never
// waits inside the invoker.
func (m *SQSMapping) Concurrency() int { return m.concurrency }

// Run polls until ctx is cancelled, then waits for every invocation in
// flight to return and settles it, and returns nil. It returns an error
// without polling when the queue cannot be described or its visibility
// timeout is shorter than the function timeout.
func (m *SQSMapping) Run(ctx context.Context) error {
	q, err := m.describe(ctx)
	if err != nil {
		return err
	}
	r := &sqsRun{m: m, queue: q, log: m.cfg.Logger.With(slog.String("queue_url", m.cfg.QueueURL)), groups: map[string]*sqsClaim{}, receipts: map[string]*receipt{}}
	if m.concurrency < m.cfg.MaximumConcurrency {
		r.log.LogAttrs(ctx, slog.LevelInfo, "localesm: the invoker runs fewer invocations at once than MaximumConcurrency; the mapping runs that many",
			slog.Int("maximum_concurrency", m.cfg.MaximumConcurrency), slog.Int("concurrency", m.concurrency))
	}
	return r.loop(ctx)
}

type queueInfo struct {
	arn, region string
}

func (m *SQSMapping) describe(ctx context.Context) (queueInfo, error) {
	out, err := m.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(m.cfg.QueueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn, sqstypes.QueueAttributeNameVisibilityTimeout},
	})
	if err != nil {
		return queueInfo{}, fmt.Errorf("localesm: describe queue %s: %w", m.cfg.QueueURL, err)
	}
	arn := out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	region, err := arnRegion(arn)
	if err != nil {
		return queueInfo{}, fmt.Errorf("localesm: describe queue %s: %w", m.cfg.QueueURL, err)
	}
	vis, err := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameVisibilityTimeout)])
	if err != nil {
		return queueInfo{}, fmt.Errorf("localesm: describe queue %s: visibility timeout: %w", m.cfg.QueueURL, err)
	}
	if time.Duration(vis)*time.Second < m.cfg.FunctionTimeout {
		return queueInfo{}, fmt.Errorf("localesm: queue %s: visibility timeout %ds is less than the function timeout %v (Lambda refuses such a mapping)",
			m.cfg.QueueURL, vis, m.cfg.FunctionTimeout)
	}
	return queueInfo{arn: arn, region: region}, nil
}

// sqsRun is the state of one Run.
type sqsRun struct {
	m     *SQSMapping
	queue queueInfo
	log   *slog.Logger

	mu sync.Mutex
	// groups maps a message group id to the batch holding it, from the
	// receive that took the group's messages until the batch's outcome has
	// been applied (its deletes answered) and reported to OnBatch.
	groups map[string]*sqsClaim
	// receipts maps the id of every message a batch holds to the receipt
	// handle of its latest receive. SQS answers a delete made with an
	// older handle with success, but may not delete the message (AWS
	// documents it; fauxqs never deletes it): only a delete made with the
	// latest handle counts as a deletion.
	receipts map[string]*receipt
}

// receipt is the latest receipt handle of a message that batches hold.
type receipt struct {
	latest  string
	holders int // batches holding the message; the entry goes with the last
}

// sqsClaim is one invocation's claim on the messages of a receive.
type sqsClaim struct {
	requestID string
	take      []sqstypes.Message // the messages to invoke, in the order received
	withheld  []WithheldMessage
	// after holds the settlements this batch waits for before it is
	// invoked: those of the batches whose groups it took over.
	after []<-chan struct{}
	// returned (guarded by sqsRun.mu) is set once the batch's function has
	// returned, before anything of its outcome is sent to SQS.
	returned bool
	settled  chan struct{} // closed once the batch's outcome has been applied and reported
}

func (r *sqsRun) loop(ctx context.Context) error {
	slots := make(chan struct{}, r.m.concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	failures := 0 // receives failed in a row
	for {
		// Take a slot before receiving: a message received without a free
		// invocation would wait while its visibility timeout runs. There
		// are no more slots than the invoker can run at once (Concurrency),
		// so an invocation never waits inside the invoker either.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		msgs, err := r.receive(ctx)
		if err != nil {
			<-slots
			if ctx.Err() != nil {
				return nil
			}
			failures++
			r.log.LogAttrs(ctx, slog.LevelWarn, "localesm: receive failed", slog.Any("error", err), slog.Int("failures", failures))
			_ = backoff.Sleep(ctx, retryWait(failures)) // a stop ends the wait; the loop then returns
			continue
		}
		failures = 0
		if len(msgs) == 0 {
			<-slots
			continue
		}
		b := r.claim(newRequestID(), msgs)
		if len(b.withheld) > 0 {
			r.warnWithheld(ctx, b.requestID, b.withheld)
		}
		if len(b.take) == 0 {
			<-slots
			r.settle(ctx, SQSBatchResult{RequestID: b.requestID, Withheld: b.withheld, Outcome: OutcomeWithheld}, nil)
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			r.process(ctx, b)
		})
	}
}

func (r *sqsRun) receive(ctx context.Context) ([]sqstypes.Message, error) {
	out, err := r.m.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(r.m.cfg.QueueURL),
		MaxNumberOfMessages:         int32(r.m.cfg.BatchSize),
		WaitTimeSeconds:             int32(r.m.cfg.PollWait / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("localesm: receive from %s: %w", r.m.cfg.QueueURL, err)
	}
	return out.Messages, nil
}

// claim makes the batch requestID of a receive's messages. A message whose
// group no other batch holds is taken, and its group is held by the new
// batch. A message whose group another batch holds is:
//   - withheld, with every other message of that group in the receive,
//     while that batch's function has not returned: its visibility timeout
//     ran out while the group was in flight, and invoking it could run it
//     beside its predecessors or ahead of them;
//   - taken, once that batch's function has returned: SQS unlocks a group
//     as soon as the last delete of its messages lands, before the delete's
//     answer arrives, so this is the group's next message (or one of the
//     batch's own, back after its visibility timeout). The new batch takes
//     the group over and waits for the other's outcome to be applied
//     before it is invoked, so that the group's order holds.
//
// Every receive, withheld or not, makes the message's receipt handle the
// latest one: a batch that still holds an older one no longer deletes it.
func (r *sqsRun) claim(requestID string, msgs []sqstypes.Message) *sqsClaim {
	b := &sqsClaim{requestID: requestID, settled: make(chan struct{})}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, msg := range msgs {
		id, handle := deref(msg.MessageId), deref(msg.ReceiptHandle)
		if rc, ok := r.receipts[id]; ok {
			rc.latest = handle
		}
		group := msg.Attributes[groupAttribute]
		if group != "" {
			if holder, held := r.groups[group]; held && holder != b {
				if !holder.returned {
					count, _ := strconv.Atoi(msg.Attributes[receiveCountAttribute])
					b.withheld = append(b.withheld, WithheldMessage{MessageID: id, GroupID: group, ReceiveCount: count})
					continue
				}
				b.after = append(b.after, holder.settled)
			}
			r.groups[group] = b
		}
		b.take = append(b.take, msg)
		rc, ok := r.receipts[id]
		if !ok {
			rc = &receipt{latest: handle}
			r.receipts[id] = rc
		}
		rc.holders++
	}
	return b
}

// warnWithheld says which messages a receive withheld: each withheld
// receive uses up one of the message's receives, and a message withheld
// often enough is moved to the dead-letter queue without being invoked.
func (r *sqsRun) warnWithheld(ctx context.Context, requestID string, withheld []WithheldMessage) {
	ids := make([]string, len(withheld))
	groups := make([]string, len(withheld))
	counts := make([]int, len(withheld))
	for i, w := range withheld {
		ids[i], groups[i], counts[i] = w.MessageID, w.GroupID, w.ReceiveCount
	}
	r.log.LogAttrs(ctx, slog.LevelWarn, "localesm: messages withheld: their group is in flight; the receive counts toward the queue's maxReceiveCount",
		slog.String("aws_request_id", requestID),
		slog.Any("message_ids", ids), slog.Any("group_ids", groups), slog.Any("receive_counts", counts))
}

// returned records that b's function has returned. It comes before any
// call that applies the outcome: a delete (or anything else that ends a
// message's flight) unlocks the group in SQS the moment it lands, and a
// receive on another connection may see the group's next message before
// its answer arrives here.
func (r *sqsRun) returned(b *sqsClaim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b.returned = true
}

// release lets go of the groups and receipt handles b still holds, once
// b's outcome has been applied and reported, and lets the batches that took
// over its groups go ahead.
func (r *sqsRun) release(b *sqsClaim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, msg := range b.take {
		group := msg.Attributes[groupAttribute]
		if group != "" && r.groups[group] == b {
			delete(r.groups, group)
		}
		id := deref(msg.MessageId)
		if rc, ok := r.receipts[id]; ok {
			if rc.holders--; rc.holders == 0 {
				delete(r.receipts, id)
			}
		}
	}
	close(b.settled)
}

// latest reports whether handle is the receipt handle of the latest receive
// of the message id.
func (r *sqsRun) latest(id, handle string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc, ok := r.receipts[id]
	return ok && rc.latest == handle
}

func (r *sqsRun) process(ctx context.Context, b *sqsClaim) {
	// The batches whose groups b took over have returned; their deletes
	// are on the way and bounded by ackTimeout.
	for _, settled := range b.after {
		<-settled
	}
	records := make([]events.SQSMessage, len(b.take))
	for i, msg := range b.take {
		records[i] = sqsRecord(msg, r.queue.arn, r.queue.region)
	}
	result := SQSBatchResult{RequestID: b.requestID, Records: records, Withheld: b.withheld}
	payload, err := json.Marshal(events.SQSEvent{Records: records})
	if err != nil { // cannot happen: plain strings and maps
		result.Outcome, result.Err = OutcomeInvokeError, fmt.Errorf("localesm: encode event: %w", err)
		r.returned(b)
		r.settle(ctx, result, records)
		r.release(b)
		return
	}
	res, err := r.m.invoker.Invoke(ctx, Invocation{
		RequestID:   b.requestID,
		FunctionARN: r.m.cfg.FunctionARN,
		Timeout:     r.m.cfg.FunctionTimeout,
		Payload:     payload,
	})
	r.returned(b)
	var d sqsDecision
	if err != nil {
		d = sqsDecision{outcome: OutcomeInvokeError, err: err}
	} else {
		d = decideSQS(records, res, r.m.cfg.ReportBatchItemFailures)
	}
	result.Outcome, result.Err = d.outcome, d.err
	result.Deleted = r.delete(ctx, b.requestID, records, d.delete)
	// Report before letting go: the batch that took one of b's groups over
	// runs once b is released, and its result must not reach OnBatch
	// before b's.
	r.settle(ctx, result, records)
	r.release(b)
}

// delete deletes the messages at the indexes, in chunks of ten, and returns
// the ids of those deleted, in batch order. A stopping mapping still
// deletes what its function finished.
//
// A delete SQS answers with success counts only when it was made with the
// message's latest receipt handle. A message received again since its
// batch received it (its visibility timeout ran out) was received before
// the delete landed: it cannot be received once deleted. SQS then says
// the delete succeeded but may not have deleted it, so it is not reported
// deleted; it will be invoked again (or was withheld) under its new
// handle. A receive whose answer is still on its way when the delete is
// answered cannot be seen here; the mapping's receives are sequential, so
// that is at most one.
func (r *sqsRun) delete(ctx context.Context, requestID string, records []events.SQSMessage, indexes []int) []string {
	if len(indexes) == 0 {
		return nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
	defer cancel()
	done := make([]bool, len(records))
	for start := 0; start < len(indexes); start += 10 {
		chunk := indexes[start:min(start+10, len(indexes))]
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(chunk))
		for j, i := range chunk {
			entries[j] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(records[i].ReceiptHandle)}
		}
		out, err := r.m.client.DeleteMessageBatch(dctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(r.m.cfg.QueueURL), Entries: entries})
		if err != nil {
			r.log.LogAttrs(ctx, slog.LevelError, "localesm: delete failed; the messages will be received again",
				slog.String("aws_request_id", requestID), slog.Int("messages", len(chunk)), slog.Any("error", err))
			continue
		}
		for _, ok := range out.Successful {
			i, err := strconv.Atoi(deref(ok.Id))
			if err != nil || i < 0 || i >= len(records) {
				continue
			}
			if !r.latest(records[i].MessageId, records[i].ReceiptHandle) {
				r.log.LogAttrs(ctx, slog.LevelWarn, "localesm: message received again before its delete landed; a delete with an older receipt handle may not delete it",
					slog.String("aws_request_id", requestID), slog.String("message_id", records[i].MessageId),
					slog.String("group_id", records[i].Attributes[groupAttribute]))
				continue
			}
			done[i] = true
		}
		for _, f := range out.Failed {
			r.log.LogAttrs(ctx, slog.LevelError, "localesm: delete failed; the message will be received again",
				slog.String("aws_request_id", requestID), slog.String("entry", deref(f.Id)),
				slog.String("code", deref(f.Code)), slog.String("error", deref(f.Message)))
		}
	}
	var deleted []string
	for i, ok := range done {
		if ok {
			deleted = append(deleted, records[i].MessageId)
		}
	}
	return deleted
}

func (r *sqsRun) settle(ctx context.Context, result SQSBatchResult, records []events.SQSMessage) {
	level := slog.LevelInfo
	if result.Outcome != OutcomeSuccess {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("aws_request_id", result.RequestID),
		slog.String("outcome", result.Outcome.String()),
		slog.Int("records", len(records)),
		slog.Int("deleted", len(result.Deleted)),
	}
	if len(result.Withheld) > 0 {
		attrs = append(attrs, slog.Int("withheld", len(result.Withheld)))
	}
	if result.Err != nil {
		attrs = append(attrs, slog.Any("error", result.Err))
	}
	r.log.LogAttrs(ctx, level, "localesm: batch settled", attrs...)
	if r.log.Enabled(ctx, slog.LevelDebug) {
		deleted := make(map[string]bool, len(result.Deleted))
		for _, id := range result.Deleted {
			deleted[id] = true
		}
		for _, rec := range records {
			r.log.LogAttrs(ctx, slog.LevelDebug, "localesm: message",
				slog.String("aws_request_id", result.RequestID),
				slog.String("message_id", rec.MessageId),
				slog.String("group_id", rec.Attributes[groupAttribute]),
				slog.String("receive_count", rec.Attributes[receiveCountAttribute]),
				slog.Bool("deleted", deleted[rec.MessageId]))
		}
	}
	if r.m.cfg.OnBatch != nil {
		r.m.cfg.OnBatch(result)
	}
}
