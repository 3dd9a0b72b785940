package localesm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/internal/base/backoff"
)

// StreamsAPI is the part of the DynamoDB Streams client a StreamMapping uses.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// MessageSender is the part of the SQS client an on-failure destination
// uses.
type MessageSender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var (
	_ StreamsAPI    = (*dynamodbstreams.Client)(nil)
	_ MessageSender = (*sqs.Client)(nil)
)

// StartingPosition is where a stream mapping starts reading the shards
// that exist when it starts.
type StartingPosition string

// Starting positions, as Lambda names them.
const (
	TrimHorizon StartingPosition = "TRIM_HORIZON" // the oldest record still in the stream (the default)
	Latest      StartingPosition = "LATEST"       // only records written after the mapping started
)

// Defaults of StreamConfig.
const (
	// DefaultStreamBatchSize is Lambda's default batch size for DynamoDB
	// Streams.
	DefaultStreamBatchSize = 100
	// DefaultPollInterval is how often an idle shard is polled: Lambda
	// polls stream shards four times a second.
	DefaultPollInterval = 250 * time.Millisecond
	// shardRefresh is how often the mapping looks for new shards.
	shardRefresh = 2 * time.Second
)

// OnFailureDestination is where a stream mapping sends a record of each
// batch it discards. Lambda accepts a standard (not FIFO) queue here.
type OnFailureDestination struct {
	Client   MessageSender
	QueueURL string
}

// StreamConfig configures a StreamMapping. Client, Invoker and StreamARN
// are required; the zero value of every other field selects its documented
// default.
type StreamConfig struct {
	// Client is the DynamoDB Streams client. Required.
	Client StreamsAPI
	// Invoker runs the function. Required.
	Invoker Invoker
	// StreamARN is the DynamoDB stream to read. Required.
	StreamARN string
	// StartingPosition applies to the shards that exist at start (default
	// TrimHorizon); shards that appear later are read from their start.
	StartingPosition StartingPosition
	// BatchSize is the most records per invocation, 1 to 1000 (default
	// 100). Lambda allows 10,000 with a batching window; this mapping makes
	// one GetRecords call per batch, which returns at most 1000.
	BatchSize int
	// MaximumRetryAttempts bounds the retries of a failed batch. Nil (the
	// default) or a pointer to -1 is Lambda's default: the batch is retried
	// every PollInterval until it succeeds or the mapping stops, and its
	// shard waits on it meanwhile; nothing is discarded. A pointer to N,
	// 0 to 10000, gives up after N retries (new(0): no retry): the rest of
	// the batch is discarded and an OnFailureRecord of it is sent to
	// OnFailure, which is then required. Write it as new(2).
	MaximumRetryAttempts *int
	// OnFailure receives an OnFailureRecord for every discarded batch. It is
	// required with a bounded MaximumRetryAttempts, so that no batch is
	// discarded without a record of it.
	OnFailure *OnFailureDestination
	// ReportBatchItemFailures enables partial batch responses.
	ReportBatchItemFailures bool
	// BisectBatchOnFunctionError splits a batch of two records or more
	// whose invocation failed (a function error, a timeout) in two halves,
	// the first ⌊n/2⌋ records and the rest, and processes each half on its
	// own, the first one to its end (finished or discarded) before the
	// second is invoked, so a shard's records still run in order. A split
	// uses up no retry: each half keeps the retries its batch had used, and
	// only a batch of one record, which cannot be split, spends them. So
	// bisection narrows a failure down to the record that causes it, and
	// with a bounded MaximumRetryAttempts only that record is discarded.
	// A partial batch response is not bisected: the retry starts at its
	// checkpoint, as without this setting.
	BisectBatchOnFunctionError bool
	// FunctionTimeout is the function's timeout (default
	// DefaultFunctionTimeout).
	FunctionTimeout time.Duration
	// FunctionARN is given to the function as InvokedFunctionArn and put in
	// on-failure records (default DefaultFunctionARN).
	FunctionARN string
	// PollInterval is how long an idle shard waits between GetRecords calls,
	// and a failed batch before its retry (default DefaultPollInterval).
	PollInterval time.Duration
	// Region, when set, replaces the awsRegion of every record (DynamoDB
	// Local reports "ddblocal").
	Region string
	// Logger receives one record per invocation (Info, Warn when it
	// failed) and per discarded batch (Error). Default: no logging.
	Logger *slog.Logger
	// OnBatch, when set, is called after each invocation has been settled.
	// It is called from one goroutine per shard and must not block for
	// long.
	OnBatch func(StreamBatchResult)
}

// StreamBatchResult describes one settled invocation of a stream batch.
type StreamBatchResult struct {
	RequestID string
	ShardID   string
	Records   []events.DynamoDBEventRecord // the event's records, in order
	Outcome   Outcome
	Done      int // leading records finished (all of them on success)
	// Attempt counts the invocations that included all of Records, this
	// one too: 1 for the first invocation of a batch read from the shard,
	// then 2, 3... A half of a bisected batch goes on from its batch's
	// count: the half's first invocation is its batch's count plus one.
	Attempt   int
	Discarded bool // the rest of the batch was given up after this attempt (bounded MaximumRetryAttempts only)
	Bisected  bool // the invocation failed and Records were split in two halves, each processed on its own (BisectBatchOnFunctionError)
	Err       error
}

// retryForever is MaximumRetryAttempts' value for retrying until success.
const retryForever = -1

// maxRetries is MaximumRetryAttempts with its default: retryForever or the
// bound.
func (c StreamConfig) maxRetries() int {
	if c.MaximumRetryAttempts == nil {
		return retryForever
	}
	return *c.MaximumRetryAttempts
}

func (c StreamConfig) withDefaults() StreamConfig {
	if p := c.MaximumRetryAttempts; p != nil { // the mapping keeps its own copy of the caller's int
		n := *p
		c.MaximumRetryAttempts = &n
	}
	if c.StartingPosition == "" {
		c.StartingPosition = TrimHorizon
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultStreamBatchSize
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	functionDefaults(&c.FunctionTimeout, &c.FunctionARN, &c.Logger)
	return c
}

// Validate reports the first setting that cannot work, after defaults,
// wrapping ErrInvalidConfig.
func (c StreamConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	case c.StreamARN == "":
		return fmt.Errorf("%w: StreamARN is empty", ErrInvalidConfig)
	case c.StartingPosition != TrimHorizon && c.StartingPosition != Latest:
		return fmt.Errorf("%w: StartingPosition %q is neither %s nor %s", ErrInvalidConfig, c.StartingPosition, TrimHorizon, Latest)
	case c.BatchSize < 1 || c.BatchSize > 1000:
		return fmt.Errorf("%w: BatchSize %d is outside [1, 1000]", ErrInvalidConfig, c.BatchSize)
	case c.maxRetries() < retryForever || c.maxRetries() > 10000:
		return fmt.Errorf("%w: MaximumRetryAttempts %d is outside [-1, 10000]", ErrInvalidConfig, c.maxRetries())
	case c.maxRetries() != retryForever && c.OnFailure == nil:
		return fmt.Errorf("%w: MaximumRetryAttempts %d without an on-failure destination would discard records unrecorded: "+
			"set OnFailure, or leave MaximumRetryAttempts nil to retry until success", ErrInvalidConfig, c.maxRetries())
	case c.PollInterval < 0:
		return fmt.Errorf("%w: PollInterval %v is negative", ErrInvalidConfig, c.PollInterval)
	}
	if d := c.OnFailure; d != nil {
		switch {
		case d.Client == nil:
			return fmt.Errorf("%w: OnFailure.Client is nil", ErrInvalidConfig)
		case d.QueueURL == "":
			return fmt.Errorf("%w: OnFailure.QueueURL is empty", ErrInvalidConfig)
		case strings.HasSuffix(d.QueueURL, ".fifo"):
			return fmt.Errorf("%w: OnFailure.QueueURL %s is a FIFO queue's; Lambda accepts only a standard queue", ErrInvalidConfig, d.QueueURL)
		}
	}
	if _, err := arnRegion(c.StreamARN); err != nil {
		return fmt.Errorf("%w: StreamARN: %w", ErrInvalidConfig, err)
	}
	return validateCommon(c.Invoker, c.FunctionTimeout)
}

// StreamMapping reads a DynamoDB stream and invokes a function with
// batches of its records, as Lambda's DynamoDB event source mapping does.
// It keeps its position in memory only: a new Run starts again from
// StartingPosition.
type StreamMapping struct {
	client  StreamsAPI
	invoker Invoker
	cfg     StreamConfig
}

// NewStreamMapping returns a mapping from cfg.StreamARN to the function
// behind cfg.Invoker, or an error wrapping ErrInvalidConfig.
func NewStreamMapping(cfg StreamConfig) (*StreamMapping, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &StreamMapping{client: cfg.Client, invoker: cfg.Invoker, cfg: cfg.withDefaults()}, nil
}

// Run reads the stream until ctx is cancelled, then waits for every
// invocation in flight to return and returns nil. It returns an error
// without reading when the stream cannot be described.
func (m *StreamMapping) Run(ctx context.Context) error {
	shards, err := m.describe(ctx)
	if err != nil {
		return err
	}
	log := m.cfg.Logger.With(slog.String("stream_arn", m.cfg.StreamARN))
	done := map[string]bool{}
	started := map[string]bool{}
	// With LATEST, the shards that exist now start at their tip; a closed
	// one has no tip to wait at and counts as read.
	position := map[string]streamtypes.ShardIteratorType{}
	for _, s := range shards {
		id := deref(s.ShardId)
		if m.cfg.StartingPosition == Latest {
			if s.SequenceNumberRange != nil && s.SequenceNumberRange.EndingSequenceNumber != nil {
				done[id] = true
				continue
			}
			position[id] = streamtypes.ShardIteratorTypeLatest
		}
	}

	finished := make(chan string)
	var wg sync.WaitGroup
	defer wg.Wait()
	ticker := time.NewTicker(shardRefresh)
	defer ticker.Stop()
	for {
		known := make(map[string]bool, len(shards))
		for _, s := range shards {
			known[deref(s.ShardId)] = true
		}
		for _, s := range shards {
			id, parent := deref(s.ShardId), deref(s.ParentShardId)
			if started[id] || done[id] {
				continue
			}
			// A parent no longer described has been trimmed: nothing of it
			// is left to read first.
			if parent != "" && known[parent] && !done[parent] {
				continue
			}
			started[id] = true
			iterType, ok := position[id]
			if !ok {
				iterType = streamtypes.ShardIteratorTypeTrimHorizon
			}
			w := &shardWorker{m: m, shardID: id, iterType: iterType, log: log.With(slog.String("shard_id", id))}
			wg.Go(func() {
				if w.run(ctx) {
					select {
					case finished <- id:
					case <-ctx.Done():
					}
				}
			})
		}
		select {
		case id := <-finished:
			done[id] = true
		case <-ticker.C:
		case <-ctx.Done():
			return nil
		}
		if s, err := m.describe(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.LogAttrs(ctx, slog.LevelWarn, "localesm: describe stream failed", slog.Any("error", err))
		} else {
			shards = s
		}
	}
}

func (m *StreamMapping) describe(ctx context.Context) ([]streamtypes.Shard, error) {
	var shards []streamtypes.Shard
	var start *string
	for {
		out, err := m.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(m.cfg.StreamARN), ExclusiveStartShardId: start})
		if err != nil {
			return nil, fmt.Errorf("localesm: describe stream %s: %w", m.cfg.StreamARN, err)
		}
		if out.StreamDescription == nil {
			return nil, fmt.Errorf("localesm: describe stream %s: no description", m.cfg.StreamARN)
		}
		shards = append(shards, out.StreamDescription.Shards...)
		start = out.StreamDescription.LastEvaluatedShardId
		if start == nil {
			return shards, nil
		}
	}
}

// shardWorker reads one shard to its end.
type shardWorker struct {
	m        *StreamMapping
	shardID  string
	iterType streamtypes.ShardIteratorType
	log      *slog.Logger

	lastRead string // sequence number of the last record read, for a fresh iterator
}

// run reads and invokes until the shard is closed and read (it returns
// true) or ctx is cancelled (false).
func (w *shardWorker) run(ctx context.Context) bool {
	it, ok := w.iterator(ctx)
	if !ok {
		return false
	}
	cfg := w.m.cfg
	failures := 0 // GetRecords calls failed in a row
	for {
		out, err := w.m.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it, Limit: aws.Int32(int32(cfg.BatchSize))})
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			var expired *streamtypes.ExpiredIteratorException
			var trimmed *streamtypes.TrimmedDataAccessException
			switch {
			case errors.As(err, &expired):
			case errors.As(err, &trimmed):
				w.log.LogAttrs(ctx, slog.LevelWarn, "localesm: records trimmed before they were read; continuing from the oldest", slog.Any("error", err))
				w.lastRead, w.iterType = "", streamtypes.ShardIteratorTypeTrimHorizon
			default:
				failures++
				w.log.LogAttrs(ctx, slog.LevelWarn, "localesm: get records failed", slog.Any("error", err), slog.Int("failures", failures))
				if backoff.Sleep(ctx, retryWait(failures)) != nil {
					return false
				}
				continue
			}
			if it, ok = w.iterator(ctx); !ok {
				return false
			}
			continue
		}
		failures = 0
		if n := len(out.Records); n > 0 {
			if d := out.Records[n-1].Dynamodb; d != nil {
				w.lastRead = deref(d.SequenceNumber)
			}
			batch := make([]events.DynamoDBEventRecord, n)
			for i, r := range out.Records {
				batch[i] = streamRecord(r, cfg.StreamARN, cfg.Region)
			}
			if !w.process(ctx, batch) {
				return false
			}
		}
		if out.NextShardIterator == nil {
			return true // closed and read to its end
		}
		it = out.NextShardIterator
		if len(out.Records) == 0 && backoff.Sleep(ctx, cfg.PollInterval) != nil {
			return false
		}
	}
}

// iterator gets a shard iterator, after the last record read when there is
// one, retrying until it succeeds or ctx is cancelled.
func (w *shardWorker) iterator(ctx context.Context) (*string, bool) {
	for failures := 1; ; failures++ {
		in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(w.m.cfg.StreamARN), ShardId: aws.String(w.shardID), ShardIteratorType: w.iterType}
		if w.lastRead != "" {
			in.ShardIteratorType, in.SequenceNumber = streamtypes.ShardIteratorTypeAfterSequenceNumber, aws.String(w.lastRead)
		}
		out, err := w.m.client.GetShardIterator(ctx, in)
		if err == nil {
			return out.ShardIterator, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		w.log.LogAttrs(ctx, slog.LevelWarn, "localesm: get shard iterator failed", slog.Any("error", err), slog.Int("failures", failures))
		if backoff.Sleep(ctx, retryWait(failures)) != nil {
			return nil, false
		}
	}
}

// span is a run of records invoked together: a batch as read from the
// shard, the rest of one after a checkpoint, or a half of a bisected one.
type span struct {
	records     []events.DynamoDBEventRecord
	invocations int // invocations so far that included every one of records
	retries     int // retries used so far; a bisection uses none
}

// process invokes the function with batch until its records are finished
// or discarded (it returns true) or ctx is cancelled (false). Spans run
// one at a time, in shard order: todo[0] runs until it is finished or
// discarded, or until it is bisected into the two spans that replace it.
func (w *shardWorker) process(ctx context.Context, batch []events.DynamoDBEventRecord) bool {
	cfg := w.m.cfg
	todo := []span{{records: batch}}
	unmade := 0 // invocations that could not be made, in a row
	for len(todo) > 0 {
		cur := &todo[0]
		requestID := newRequestID()
		payload, err := json.Marshal(events.DynamoDBEvent{Records: cur.records})
		if err != nil { // cannot happen: the records are plain data
			w.log.LogAttrs(ctx, slog.LevelError, "localesm: encode event", slog.Any("error", err))
			if !w.discard(ctx, cur.records, requestID, cur.invocations, StatusFunctionError) {
				return false
			}
			todo = todo[1:]
			continue
		}
		res, err := w.m.invoker.Invoke(ctx, Invocation{
			RequestID:   requestID,
			FunctionARN: cfg.FunctionARN,
			Timeout:     cfg.FunctionTimeout,
			Payload:     payload,
		})
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			// The function did not run: like Lambda, retry without using up
			// an attempt, and without bisecting.
			w.settle(ctx, StreamBatchResult{RequestID: requestID, ShardID: w.shardID, Records: cur.records, Outcome: OutcomeInvokeError, Attempt: cur.invocations + 1, Err: err})
			unmade++
			if backoff.Sleep(ctx, retryWait(unmade)) != nil {
				return false
			}
			continue
		}
		unmade = 0
		cur.invocations++
		d := decideStream(cur.records, res, cfg.ReportBatchItemFailures)
		result := StreamBatchResult{RequestID: requestID, ShardID: w.shardID, Records: cur.records, Outcome: d.outcome, Done: d.done, Attempt: cur.invocations, Err: d.err}
		switch {
		case d.outcome == OutcomeSuccess:
			w.settle(ctx, result)
			todo = todo[1:]
			continue
		case cfg.BisectBatchOnFunctionError && bisects(d.outcome) && len(cur.records) > 1:
			result.Bisected = true
			w.settle(ctx, result)
			half := len(cur.records) / 2
			first := span{records: cur.records[:half], invocations: cur.invocations, retries: cur.retries}
			second := span{records: cur.records[half:], invocations: cur.invocations, retries: cur.retries}
			todo = append([]span{first, second}, todo[1:]...)
		case cfg.maxRetries() != retryForever && cur.retries >= cfg.maxRetries():
			result.Discarded = true
			w.settle(ctx, result)
			if !w.discard(ctx, cur.records[d.done:], requestID, cur.invocations, res.Status) {
				return false
			}
			todo = todo[1:]
			continue
		default:
			w.settle(ctx, result)
			cur.records = cur.records[d.done:]
			cur.retries++
		}
		if backoff.Sleep(ctx, cfg.PollInterval) != nil {
			return false
		}
	}
	return true
}

// bisects reports whether an invocation with this outcome is a failed
// invocation that BisectBatchOnFunctionError splits: the function
// returned an error (or crashed, or answered over MaxResponseSize) or
// timed out. A partial batch response is not (its retry starts at the
// checkpoint), and neither is an invalid one: the function returned, and
// AWS documents bisection for function errors only.
func bisects(o Outcome) bool { return o == OutcomeFunctionError || o == OutcomeTimeout }

// discard gives up on batch: it sends its record to the on-failure
// destination, retrying until that succeeds, so that nothing is dropped
// unrecorded. It returns false only when ctx is cancelled first. Validate
// requires the destination whenever retries are bounded; it can be missing
// only for an event that cannot be encoded, which cannot happen.
func (w *shardWorker) discard(ctx context.Context, batch []events.DynamoDBEventRecord, requestID string, invocations int, last Status) bool {
	cfg := w.m.cfg
	attrs := []slog.Attr{
		slog.String("aws_request_id", requestID),
		slog.Int("records", len(batch)),
		slog.String("start_sequence_number", batch[0].Change.SequenceNumber),
		slog.String("end_sequence_number", batch[len(batch)-1].Change.SequenceNumber),
		slog.Int("invocations", invocations),
	}
	dest := cfg.OnFailure
	if dest == nil {
		w.log.LogAttrs(ctx, slog.LevelError, "localesm: retries exhausted; records discarded (no on-failure destination)", attrs...)
		return true
	}
	body, err := json.Marshal(onFailureRecord(batch, w.shardID, cfg.StreamARN, cfg.FunctionARN, requestID, invocations, last, time.Now()))
	if err != nil { // cannot happen: strings and ints
		w.log.LogAttrs(ctx, slog.LevelError, "localesm: encode on-failure record", append(attrs, slog.Any("error", err))...)
		return true
	}
	for failures := 1; ; failures++ {
		sctx, cancel := context.WithTimeout(ctx, ackTimeout)
		_, err := dest.Client.SendMessage(sctx, &sqs.SendMessageInput{QueueUrl: aws.String(dest.QueueURL), MessageBody: aws.String(string(body))})
		cancel()
		if err == nil {
			w.log.LogAttrs(ctx, slog.LevelError, "localesm: retries exhausted; records discarded, on-failure record sent",
				append(attrs, slog.String("on_failure_queue_url", dest.QueueURL))...)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		w.log.LogAttrs(ctx, slog.LevelWarn, "localesm: send on-failure record failed; retrying", append(attrs, slog.Any("error", err), slog.Int("failures", failures))...)
		if backoff.Sleep(ctx, retryWait(failures)) != nil {
			return false
		}
	}
}

func (w *shardWorker) settle(ctx context.Context, result StreamBatchResult) {
	level := slog.LevelInfo
	if result.Outcome != OutcomeSuccess {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("aws_request_id", result.RequestID),
		slog.String("outcome", result.Outcome.String()),
		slog.Int("records", len(result.Records)),
		slog.Int("done", result.Done),
		slog.Int("attempt", result.Attempt),
	}
	if result.Bisected {
		attrs = append(attrs, slog.Bool("bisected", true))
	}
	if len(result.Records) > 0 {
		attrs = append(attrs, slog.String("start_sequence_number", result.Records[0].Change.SequenceNumber))
	}
	if result.Err != nil {
		attrs = append(attrs, slog.Any("error", result.Err))
	}
	w.log.LogAttrs(ctx, level, "localesm: stream batch settled", attrs...)
	if w.m.cfg.OnBatch != nil {
		w.m.cfg.OnBatch(result)
	}
}
