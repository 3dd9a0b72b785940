package localesm

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/base/backoff"
	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// AtTimestamp starts a Kafka mapping's partitions at the first record
// whose timestamp is at or after KafkaConfig.StartingPositionTimestamp.
const AtTimestamp StartingPosition = "AT_TIMESTAMP"

// Defaults and limits of KafkaConfig.
const (
	// DefaultKafkaBatchSize is Lambda's default batch size for Kafka.
	DefaultKafkaBatchSize = 100
	// DefaultKafkaBatchingWindow is Lambda's default batching window for
	// Amazon MSK and self-managed Kafka: 500 ms.
	DefaultKafkaBatchingWindow = 500 * time.Millisecond
	// NoBatchingWindow, as KafkaConfig.MaximumBatchingWindow, invokes as
	// soon as records are fetched (Lambda's MaximumBatchingWindowInSeconds
	// of 0).
	NoBatchingWindow time.Duration = -1
	// MaxRequestSize is the largest event, in bytes, a mapping sends:
	// one byte under Lambda's 6 MB quota for a synchronous invocation's
	// request, whose error reads "Request must be smaller than 6291456
	// bytes" (6 MiB itself is refused). A Kafka batch closes before its
	// event would cross it.
	MaxRequestSize = 6<<20 - 1
	// maxKafkaFunctionTimeout is the longest timeout Lambda allows a
	// function behind a Kafka event source mapping: 14 minutes, not 15.
	maxKafkaFunctionTimeout = 14 * time.Minute
	// kafkaRetryCapWithOnFailure is the retries Lambda applies when
	// MaximumRetryAttempts is infinite and an on-failure destination is set.
	kafkaRetryCapWithOnFailure = 10
)

// The patterns Lambda's CloudFormation schema
// (AWS::Lambda::EventSourceMapping) gives Kafka settings, held to the
// whole value: AWS publishes them unanchored.
var (
	// Topics: ^[^.]([a-zA-Z0-9\-_.]+), 1 to 249 characters, within
	// Kafka's own legal characters: at least two characters, the first not
	// a dot.
	kafkaTopicPattern = regexp.MustCompile(`^[a-zA-Z0-9_-][a-zA-Z0-9._-]+$`)
	// ConsumerGroupId: [a-zA-Z0-9-\/*:_+=.@-]*, 1 to 200 characters.
	kafkaGroupPattern = regexp.MustCompile(`^[a-zA-Z0-9/*:_+=.@-]*$`)
	// SelfManagedEventSource.Endpoints.KafkaBootstrapServers: host:port.
	kafkaServerPattern = regexp.MustCompile(`^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])\.)*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]):[0-9]{1,5}$`)
)

// KafkaConfig configures a KafkaMapping. BootstrapServers, Topics and
// Invoker are required; the zero value of every other field selects its
// documented default.
type KafkaConfig struct {
	// BootstrapServers are the brokers, host:port each: 1 to 10, as
	// SelfManagedEventSource.Endpoints.KafkaBootstrapServers allows.
	// Required (for MSK too: locally there is no cluster ARN to look them
	// up by).
	BootstrapServers []string
	// Topics is the topic to read, exactly one, as Lambda allows
	// (AWS::Lambda::EventSourceMapping Topics: minItems 1, maxItems 1):
	// 2 to 249 characters of a-z, A-Z, 0-9, '.', '_', '-', not starting
	// with a dot. Required.
	Topics []string
	// ConsumerGroupID is the consumer group the mapping joins: 1 to 200
	// characters of a-z, A-Z, 0-9 and -/*:_+=.@ (default: a new UUID per
	// mapping, the "unique value" Lambda picks). A group with a committed
	// offset for a partition resumes from it and ignores StartingPosition,
	// as Lambda does.
	ConsumerGroupID string
	// EventSource is the event's eventSource (default
	// EventSourceSelfManagedKafka).
	EventSource KafkaEventSource
	// ClusterARN is the MSK cluster's ARN, the event's eventSourceArn.
	// Required with EventSourceMSK, refused with self-managed Kafka, whose
	// events have no eventSourceArn.
	ClusterARN string
	// StartingPosition applies to partitions the group has no committed
	// offset for: TrimHorizon (the default; Lambda requires it to be
	// set), Latest, or AtTimestamp.
	StartingPosition StartingPosition
	// StartingPositionTimestamp is where AtTimestamp starts; required with
	// it, not in the future. Lambda takes whole seconds.
	StartingPositionTimestamp time.Time
	// BatchSize is the most records per invocation, 1 to 10,000 (default
	// DefaultKafkaBatchSize). A batch also closes before its event would
	// cross MaxRequestSize.
	BatchSize int
	// MaximumBatchingWindow is how long a batch gathers records after the
	// first one arrives: DefaultKafkaBatchingWindow (the default, 500 ms),
	// NoBatchingWindow, or a whole number of seconds from 1s to 300s (what
	// Lambda accepts once changed).
	MaximumBatchingWindow time.Duration
	// ReportBatchItemFailures enables partial batch responses
	// (kafka.EventResponse). Off, the response is ignored.
	ReportBatchItemFailures bool
	// BisectBatchOnFunctionError splits a batch of two records or more
	// whose invocation failed (a function error, a timeout) in two halves,
	// each partition's first ⌊n/2⌋ records and the rest, and processes the
	// first to its end before the second. A split uses up no retry.
	BisectBatchOnFunctionError bool
	// MaximumRetryAttempts bounds the retries of a failed batch. Nil (the
	// default) or -1 retries until success, except that Lambda caps it at
	// 10 when OnFailure is set; 0 to 10,000 gives up after that many.
	// Given up records go to OnFailure, which a bound requires. Write it
	// as new(2).
	MaximumRetryAttempts *int
	// MaximumRecordAge is the age past which a record is given up instead
	// of invoked, measured from its timestamp: zero (the default, Lambda's
	// -1) for none, else a whole number of seconds from 60s to 604,800s
	// (7 days). It requires OnFailure.
	MaximumRecordAge time.Duration
	// OnFailure receives what the mapping gives up on, before it commits
	// past it. Required with a bounded MaximumRetryAttempts or a
	// MaximumRecordAge, so that nothing is given up unrecorded.
	OnFailure KafkaOnFailureDestination
	// Invoker runs the function. Required.
	Invoker Invoker
	// FunctionTimeout is the function's timeout (default
	// DefaultFunctionTimeout), at most 14 minutes: Lambda's limit for a
	// function behind a Kafka mapping.
	FunctionTimeout time.Duration
	// FunctionARN is given to the function as InvokedFunctionArn and put in
	// on-failure records (default DefaultFunctionARN).
	FunctionARN string
	// Logger receives one record per invocation (Info, Warn when it
	// failed), per span given up (Error) and per failed commit (Warn).
	// Default: no logging.
	Logger *slog.Logger
	// Now is the clock of record ages and on-failure records' timestamps
	// (default time.Now).
	Now func() time.Time
	// OnBatch, when set, is called after each invocation has been
	// settled (its commits made). It is called from one goroutine per batch
	// in flight and must not block for long.
	OnBatch func(KafkaBatchResult)
}

// KafkaBatchResult describes one settled invocation, or a span given up
// without one.
type KafkaBatchResult struct {
	RequestID string
	// Offsets are the invocation's records, per topic-partition.
	Offsets map[string][]int64
	Outcome Outcome
	// Attempt counts the invocations that included all of Offsets, this
	// one too (0 for records given up without being invoked).
	Attempt int
	// Bisected: the invocation failed and its records were split in two
	// halves (BisectBatchOnFunctionError).
	Bisected bool
	// Discarded are the records given up after it and sent to OnFailure.
	Discarded map[string][]int64
	// Committed are the offsets committed after it (the next record to
	// read), for the partitions whose committed offset moved.
	Committed map[string]int64
	Err       error
}

func (c KafkaConfig) withDefaults() KafkaConfig {
	if p := c.MaximumRetryAttempts; p != nil { // the mapping keeps its own copy of the caller's int
		n := *p
		c.MaximumRetryAttempts = &n
	}
	c.BootstrapServers = slices.Clone(c.BootstrapServers)
	c.Topics = slices.Clone(c.Topics)
	if c.EventSource == "" {
		c.EventSource = EventSourceSelfManagedKafka
	}
	if c.StartingPosition == "" {
		c.StartingPosition = TrimHorizon
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultKafkaBatchSize
	}
	if c.MaximumBatchingWindow == 0 {
		c.MaximumBatchingWindow = DefaultKafkaBatchingWindow
	}
	functionDefaults(&c.FunctionTimeout, &c.FunctionARN, &c.Logger)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// maxRetries is MaximumRetryAttempts in force: retryForever, or the bound
// (10 for -1 with an on-failure destination, as Lambda caps it).
func (c KafkaConfig) maxRetries() int {
	n := retryForever
	if c.MaximumRetryAttempts != nil {
		n = *c.MaximumRetryAttempts
	}
	if n == retryForever && c.OnFailure != nil {
		return kafkaRetryCapWithOnFailure
	}
	return n
}

// window is the batching window in force; 0 invokes at once.
func (c KafkaConfig) window() time.Duration { return max(c.MaximumBatchingWindow, 0) }

// Validate reports the first setting that cannot work, after defaults,
// wrapping ErrInvalidConfig.
func (c KafkaConfig) Validate() error {
	c = c.withDefaults()
	for _, check := range []func() error{c.validateSource, c.validateStart, c.validateBatching, c.validateFailures} {
		if err := check(); err != nil {
			return err
		}
	}
	if c.FunctionTimeout > maxKafkaFunctionTimeout {
		return fmt.Errorf("%w: FunctionTimeout %v is over %v, Lambda's limit for a Kafka event source", ErrInvalidConfig, c.FunctionTimeout, maxKafkaFunctionTimeout)
	}
	return validateCommon(c.Invoker, c.FunctionTimeout)
}

func (c KafkaConfig) validateSource() error {
	if n := len(c.BootstrapServers); n < 1 || n > 10 {
		return fmt.Errorf("%w: BootstrapServers has %d entries; Lambda takes 1 to 10", ErrInvalidConfig, n)
	}
	for i, s := range c.BootstrapServers {
		if len(s) > 300 || !kafkaServerPattern.MatchString(s) || slices.Contains(c.BootstrapServers[:i], s) {
			return fmt.Errorf("%w: BootstrapServers[%d] %q is not a host:port of at most 300 characters, once", ErrInvalidConfig, i, s)
		}
	}
	if len(c.Topics) != 1 {
		return fmt.Errorf("%w: Topics has %d topics; Lambda takes exactly one per mapping", ErrInvalidConfig, len(c.Topics))
	}
	if t := c.Topics[0]; !validKafkaTopic(t) {
		return fmt.Errorf("%w: Topics[0] %q is not 2 to 249 characters of a-z, A-Z, 0-9, '.', '_', '-' not starting with '.'", ErrInvalidConfig, t)
	}
	if g := c.ConsumerGroupID; g != "" && (len(g) > 200 || !kafkaGroupPattern.MatchString(g)) {
		return fmt.Errorf("%w: ConsumerGroupID %q is not 1 to 200 characters of a-z, A-Z, 0-9 and -/*:_+=.@", ErrInvalidConfig, g)
	}
	switch c.EventSource {
	case EventSourceMSK:
		if !strings.HasPrefix(c.ClusterARN, "arn:") || !strings.Contains(c.ClusterARN, ":kafka:") || !strings.Contains(c.ClusterARN, ":cluster/") {
			return fmt.Errorf("%w: ClusterARN %q is not an MSK cluster ARN (arn:aws:kafka:region:account:cluster/...), which %s requires", ErrInvalidConfig, c.ClusterARN, EventSourceMSK)
		}
	case EventSourceSelfManagedKafka:
		if c.ClusterARN != "" {
			return fmt.Errorf("%w: ClusterARN is set, but %s events have no eventSourceArn", ErrInvalidConfig, EventSourceSelfManagedKafka)
		}
	default:
		return fmt.Errorf("%w: EventSource %q is neither %s nor %s", ErrInvalidConfig, c.EventSource, EventSourceMSK, EventSourceSelfManagedKafka)
	}
	return nil
}

func validKafkaTopic(t string) bool { return len(t) <= 249 && kafkaTopicPattern.MatchString(t) }

func (c KafkaConfig) validateStart() error {
	switch c.StartingPosition {
	case TrimHorizon, Latest:
		if !c.StartingPositionTimestamp.IsZero() {
			return fmt.Errorf("%w: StartingPositionTimestamp is set, but StartingPosition is %s, not %s", ErrInvalidConfig, c.StartingPosition, AtTimestamp)
		}
	case AtTimestamp:
		if ts := c.StartingPositionTimestamp; ts.IsZero() || ts.After(c.Now()) {
			return fmt.Errorf("%w: StartingPositionTimestamp %v must be set and not in the future with %s", ErrInvalidConfig, ts, AtTimestamp)
		}
	default:
		return fmt.Errorf("%w: StartingPosition %q is none of %s, %s, %s", ErrInvalidConfig, c.StartingPosition, TrimHorizon, Latest, AtTimestamp)
	}
	return nil
}

func (c KafkaConfig) validateBatching() error {
	if c.BatchSize < 1 || c.BatchSize > 10000 {
		return fmt.Errorf("%w: BatchSize %d is outside [1, 10000]", ErrInvalidConfig, c.BatchSize)
	}
	if w := c.MaximumBatchingWindow; w != DefaultKafkaBatchingWindow && w != NoBatchingWindow && (w < time.Second || w > 300*time.Second || w%time.Second != 0) {
		return fmt.Errorf("%w: MaximumBatchingWindow %v is not a whole number of seconds in [1s, 300s], NoBatchingWindow or the default %v", ErrInvalidConfig, w, DefaultKafkaBatchingWindow)
	}
	return nil
}

func (c KafkaConfig) validateFailures() error {
	n := retryForever
	if c.MaximumRetryAttempts != nil {
		n = *c.MaximumRetryAttempts
	}
	switch age := c.MaximumRecordAge; {
	case n < retryForever || n > 10000:
		return fmt.Errorf("%w: MaximumRetryAttempts %d is outside [-1, 10000]", ErrInvalidConfig, n)
	case n != retryForever && c.OnFailure == nil:
		return fmt.Errorf("%w: MaximumRetryAttempts %d without an on-failure destination would give records up unrecorded: "+
			"set OnFailure, or leave MaximumRetryAttempts nil to retry until success", ErrInvalidConfig, n)
	case age != 0 && (age < time.Minute || age > 604800*time.Second || age%time.Second != 0):
		return fmt.Errorf("%w: MaximumRecordAge %v is not a whole number of seconds in [60s, 604800s] (zero: no limit)", ErrInvalidConfig, age)
	case age != 0 && c.OnFailure == nil:
		return fmt.Errorf("%w: MaximumRecordAge %v without an on-failure destination (OnFailure) would give records up unrecorded", ErrInvalidConfig, age)
	}
	switch d := c.OnFailure.(type) {
	case KafkaTopicDestination:
		switch {
		case d.Producer == nil:
			return fmt.Errorf("%w: OnFailure.Producer is nil", ErrInvalidConfig)
		case !validKafkaTopic(d.Topic):
			return fmt.Errorf("%w: OnFailure.Topic %q is not a topic name", ErrInvalidConfig, d.Topic)
		case d.Topic == c.Topics[0]:
			return fmt.Errorf("%w: OnFailure.Topic %q is the source topic; Lambda refuses a destination that would loop", ErrInvalidConfig, d.Topic)
		}
	case KafkaSQSDestination:
		switch {
		case d.Client == nil:
			return fmt.Errorf("%w: OnFailure.Client is nil", ErrInvalidConfig)
		case d.QueueURL == "":
			return fmt.Errorf("%w: OnFailure.QueueURL is empty", ErrInvalidConfig)
		case strings.HasSuffix(d.QueueURL, ".fifo"):
			return fmt.Errorf("%w: OnFailure.QueueURL %s is a FIFO queue's; an on-failure record has no message group", ErrInvalidConfig, d.QueueURL)
		}
	}
	return nil
}

// KafkaMapping reads a Kafka topic as a consumer group member and invokes
// a function with batches of its records, as Lambda's Amazon MSK and
// self-managed Apache Kafka event source mappings do. Its position is the
// group's committed offsets: a new Run, or another mapping in the same
// group, resumes from them.
type KafkaMapping struct {
	cfg   KafkaConfig
	limit int // the invoker's ConcurrencyLimiter bound; 0 for none
	// newConsumer makes the group member; tests replace it with a fake.
	newConsumer func(kafkaConsumerConfig) (kafkaConsumer, error)
}

// NewKafkaMapping returns a mapping from cfg.Topics to the function behind
// cfg.Invoker, or an error wrapping ErrInvalidConfig.
func NewKafkaMapping(cfg KafkaConfig) (*KafkaMapping, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.ConsumerGroupID == "" {
		cfg.ConsumerGroupID = newRequestID()
	}
	m := &KafkaMapping{cfg: cfg, newConsumer: newKgoConsumer}
	if l, ok := cfg.Invoker.(ConcurrencyLimiter); ok && l.MaxConcurrency() >= 1 {
		m.limit = l.MaxConcurrency()
	}
	return m, nil
}

// ConsumerGroupID is the group the mapping joins: the configured one, or
// the one NewKafkaMapping made up.
func (m *KafkaMapping) ConsumerGroupID() string { return m.cfg.ConsumerGroupID }

// Run joins the group and invokes the function until ctx is cancelled,
// then waits for every invocation in flight to return and be settled (a
// function that returned has its records committed), leaves the group and
// returns nil. It returns an error without reading when the consumer
// cannot be made.
func (m *KafkaMapping) Run(ctx context.Context) error {
	r := &kafkaRun{
		m:     m,
		log:   m.cfg.Logger.With(slog.String("topic", m.cfg.Topics[0]), slog.String("consumer_group_id", m.cfg.ConsumerGroupID)),
		src:   kafkaSource{eventSource: m.cfg.EventSource, arn: m.cfg.ClusterARN, bootstrap: strings.Join(m.cfg.BootstrapServers, ",")},
		parts: map[kafkaTP]*kafkaPartition{},
		wake:  make(chan struct{}, 1),
	}
	consumer, err := m.newConsumer(kafkaConsumerConfig{
		bootstrap: m.cfg.BootstrapServers, topic: m.cfg.Topics[0], group: m.cfg.ConsumerGroupID,
		start: m.cfg.StartingPosition, startAt: m.cfg.StartingPositionTimestamp,
		assigned: r.assigned, revoked: r.revoked,
	})
	if err != nil {
		return fmt.Errorf("localesm: kafka consumer for %s: %w", m.cfg.Topics[0], err)
	}
	r.consumer = consumer
	var wg sync.WaitGroup
	defer consumer.Close() // after every batch has settled: leaving the group revokes what is left
	defer wg.Wait()
	wg.Go(func() { r.poll(ctx) })
	r.dispatch(ctx, &wg)
	return nil
}

// kafkaRun is the state of one Run.
type kafkaRun struct {
	m        *KafkaMapping
	log      *slog.Logger
	src      kafkaSource
	consumer kafkaConsumer
	wake     chan struct{} // a partition may have become ready to batch

	// commitMu orders commits with revocations: a commit checks ownership
	// and is answered before a revocation is recorded, so no partition is
	// committed by this member after it was revoked.
	commitMu sync.Mutex
	// pauseMu orders the consumer's Pause and Resume calls, each computed
	// from the state of the moment.
	pauseMu sync.Mutex

	mu       sync.Mutex
	parts    map[kafkaTP]*kafkaPartition
	epoch    uint64 // the last assignment's number
	inflight int    // batches being processed
}

// kafkaPartition is a partition the member holds or has held.
type kafkaPartition struct {
	// epoch numbers the assignment the member holds the partition by; 0
	// when revoked. A batch commits only under the epoch it was made in.
	epoch uint64
	buf   []*kafkaRecord // fetched, not yet batched, in offset order
	next  int64          // the offset after the last record taken in; -1 after an assignment
	// busy: a batch holding the partition is being processed, of this
	// assignment or of an earlier one. No batch is made of a busy
	// partition: one invocation per partition at a time.
	busy   bool
	paused bool // fetching it is paused (a full buffer)
}

func (r *kafkaRun) assigned(tps []kafkaTP) {
	r.mu.Lock()
	r.epoch++
	for _, tp := range tps {
		p := r.parts[tp]
		if p == nil {
			p = &kafkaPartition{}
			r.parts[tp] = p
		}
		p.epoch, p.buf, p.next = r.epoch, nil, -1
	}
	r.mu.Unlock()
	r.log.Info("localesm: partitions assigned", slog.Any("partitions", tpStrings(tps)))
	r.syncPaused() // a partition paused under an earlier assignment stays paused in the consumer
}

func (r *kafkaRun) revoked(tps []kafkaTP) {
	r.commitMu.Lock() // wait for a commit in flight: it was made while the partition was held
	defer r.commitMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tp := range tps {
		if p := r.parts[tp]; p != nil {
			p.epoch, p.buf = 0, nil
		}
	}
	r.log.Info("localesm: partitions revoked", slog.Any("partitions", tpStrings(tps)))
}

func tpStrings(tps []kafkaTP) []string {
	s := make([]string, len(tps))
	for i, tp := range tps {
		s[i] = tp.String()
	}
	slices.Sort(s)
	return s
}

// poll takes fetched records in until ctx ends.
func (r *kafkaRun) poll(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		recs, err := r.consumer.Poll(ctx)
		r.take(recs)
		r.consumer.AllowRebalance()
		r.syncPaused()
		r.signal()
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		r.log.Warn("localesm: kafka poll failed", slog.Any("error", err), slog.Int("failures", failures))
		_ = backoff.Sleep(ctx, retryWait(failures)) // a stop ends the wait; the loop then returns
	}
}

// take buffers records of partitions the member holds. A record before the
// partition's next offset (fetched again) is dropped.
func (r *kafkaRun) take(recs []*kgo.Record) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range recs {
		p := r.parts[kafkaTP{rec.Topic, rec.Partition}]
		if p == nil || p.epoch == 0 || rec.Offset < p.next {
			continue
		}
		p.buf = append(p.buf, newKafkaRecord(rec, now))
		p.next = rec.Offset + 1
	}
}

func (r *kafkaRun) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// syncPaused pauses the partitions whose buffer holds a batch's worth and
// resumes the others, so the mapping holds at most about BatchSize records
// of a partition that waits.
func (r *kafkaRun) syncPaused() {
	r.pauseMu.Lock()
	defer r.pauseMu.Unlock()
	var pause, resume []kafkaTP
	r.mu.Lock()
	for tp, p := range r.parts {
		want := p.epoch != 0 && len(p.buf) >= r.m.cfg.BatchSize
		switch {
		case want && !p.paused:
			pause = append(pause, tp)
		case !want && p.paused:
			resume = append(resume, tp)
		}
		p.paused = want
	}
	r.mu.Unlock()
	if len(pause) > 0 {
		r.consumer.Pause(pause...)
	}
	if len(resume) > 0 {
		r.consumer.Resume(resume...)
	}
}

// dispatch starts a batch whenever one is ready, until ctx ends.
func (r *kafkaRun) dispatch(ctx context.Context, wg *sync.WaitGroup) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		b, wait := r.next()
		if b != nil {
			r.syncPaused()
			wg.Go(func() { r.process(ctx, b) })
			continue
		}
		var due <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			due = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-due:
		}
		timer.Stop()
	}
}

// kafkaBatch is a batch being processed.
type kafkaBatch struct {
	span     kafkaSpan
	epochs   map[kafkaTP]uint64 // each partition's epoch when the batch was made
	tooLarge bool               // one record whose event alone is over MaxRequestSize
	// records and completed feed kafka.CommitOffsets: the batch's records
	// (offsets only) and those finished, succeeded or given up.
	records   events.KafkaEvent
	completed map[kafka.ItemIdentifier]bool
	committed map[kafkaTP]int64 // offsets committed so far
}

// next makes a batch of the records of partitions no batch holds, when
// one is ready: BatchSize records, an event that cannot take the next
// record under MaxRequestSize, or the batching window past since the
// oldest record arrived. Otherwise it says how long until the window
// ends (0: nothing to wait for).
func (r *kafkaRun) next() (*kafkaBatch, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m.limit > 0 && r.inflight >= r.m.limit {
		return nil, 0
	}
	var ready []kafkaTP
	for tp, p := range r.parts {
		if p.epoch != 0 && !p.busy && len(p.buf) > 0 {
			ready = append(ready, tp)
		}
	}
	if len(ready) == 0 {
		return nil, 0
	}
	slices.SortFunc(ready, func(a, b kafkaTP) int {
		return cmp.Or(r.parts[a].buf[0].arrived.Compare(r.parts[b].buf[0].arrived), cmp.Compare(a.String(), b.String()))
	})
	var size kafkaEventSize
	size.reset(r.src)
	take, count, full := map[kafkaTP]int{}, 0, false
	for _, tp := range ready {
		for _, rec := range r.parts[tp].buf {
			if count == r.m.cfg.BatchSize || size.total+size.grow(tp, rec) > MaxRequestSize {
				full = true
				break
			}
			size.add(tp, rec)
			take[tp]++
			count++
		}
		if full {
			break
		}
	}
	full = full || count == r.m.cfg.BatchSize
	if count == 0 { // the oldest record alone makes an event over MaxRequestSize
		b := r.takeBatch(map[kafkaTP]int{ready[0]: 1})
		b.tooLarge = true
		return b, 0
	}
	if wait := time.Until(r.parts[ready[0]].buf[0].arrived.Add(r.m.cfg.window())); !full && wait > 0 {
		return nil, wait
	}
	return r.takeBatch(take), 0
}

// takeBatch moves the leading records of each partition out of its buffer
// into a new batch, and marks the partitions busy. r.mu is held.
func (r *kafkaRun) takeBatch(take map[kafkaTP]int) *kafkaBatch {
	b := &kafkaBatch{
		epochs:    map[kafkaTP]uint64{},
		records:   events.KafkaEvent{Records: map[string][]events.KafkaRecord{}},
		completed: map[kafka.ItemIdentifier]bool{},
		committed: map[kafkaTP]int64{},
	}
	for tp, n := range take {
		p := r.parts[tp]
		recs := slices.Clone(p.buf[:n])
		p.buf = p.buf[n:]
		p.busy = true
		b.epochs[tp] = p.epoch
		b.span.parts = append(b.span.parts, kafkaPart{tp: tp, recs: recs})
		for _, rec := range recs {
			b.records.Records[tp.String()] = append(b.records.Records[tp.String()],
				events.KafkaRecord{Topic: tp.topic, Partition: int64(tp.partition), Offset: rec.rec.Offset})
		}
		b.committed[tp] = recs[0].rec.Offset
	}
	slices.SortFunc(b.span.parts, func(a, b kafkaPart) int { return cmp.Compare(a.tp.String(), b.tp.String()) })
	r.inflight++
	return b
}

// release lets go of b's partitions once it is processed.
func (r *kafkaRun) release(b *kafkaBatch) {
	r.mu.Lock()
	for tp := range b.epochs {
		r.parts[tp].busy = false
	}
	r.inflight--
	r.mu.Unlock()
	r.signal()
}

// process invokes the function with b until its records are finished or
// given up, its partitions revoked, or ctx cancelled. Spans run one at a
// time, in order: todo[0] runs until it is finished or given up, or until
// it is bisected into the two spans that replace it. A failed span waits
// retryWait before its retry.
func (r *kafkaRun) process(ctx context.Context, b *kafkaBatch) {
	defer r.release(b)
	todo := []kafkaSpan{b.span}
	failures := 0 // attempts in a row that left records to retry
	for len(todo) > 0 {
		cur := todo[0]
		cur.parts = r.held(cur.parts, b.epochs)
		cur, ok := r.expire(ctx, b, cur)
		if !ok {
			return
		}
		if cur.len() == 0 {
			todo = todo[1:]
			continue
		}
		var next []kafkaSpan
		if b.tooLarge {
			next, ok = r.oversized(ctx, b, cur)
		} else {
			next, ok = r.attempt(ctx, b, cur)
		}
		if !ok {
			return
		}
		todo = append(next, todo[1:]...)
		if len(next) == 0 {
			failures = 0
			continue
		}
		failures++
		if backoff.Sleep(ctx, retryWait(failures)) != nil {
			return
		}
	}
}

// attempt invokes cur and applies the outcome. It returns what replaces
// cur: nothing once it is finished or given up, its two halves, or what is
// left to retry; and false when ctx was cancelled.
func (r *kafkaRun) attempt(ctx context.Context, b *kafkaBatch, cur kafkaSpan) ([]kafkaSpan, bool) {
	cfg := r.m.cfg
	requestID := newRequestID()
	res, err := cfg.Invoker.Invoke(ctx, Invocation{RequestID: requestID, FunctionARN: cfg.FunctionARN, Timeout: cfg.FunctionTimeout, Payload: r.src.encode(cur.parts)})
	if err != nil {
		if ctx.Err() != nil {
			return nil, false
		}
		// The function did not run: retry without using up an attempt.
		r.settle(ctx, KafkaBatchResult{RequestID: requestID, Offsets: offsetsOf(cur.parts), Outcome: OutcomeInvokeError, Attempt: cur.invocations + 1, Err: err})
		return []kafkaSpan{cur}, true
	}
	cur.invocations++
	cur.requestID, cur.status = requestID, &res.Status
	d := decideKafka(cur, res, cfg.ReportBatchItemFailures)
	result := KafkaBatchResult{RequestID: requestID, Offsets: offsetsOf(cur.parts), Outcome: d.outcome, Attempt: cur.invocations, Err: d.err}
	done, rest := cut(cur.parts, d.done)
	switch {
	case d.outcome == OutcomeSuccess:
		result.Committed = r.finish(ctx, b, done)
		r.settle(ctx, result)
		return nil, true
	case cfg.BisectBatchOnFunctionError && bisects(d.outcome) && cur.len() > 1:
		result.Bisected = true
		r.settle(ctx, result)
		first, second := cur.bisect()
		return []kafkaSpan{first, second}, true
	default:
		result.Committed = r.finish(ctx, b, done)
		retry, exhausted := r.countRetries(rest)
		if len(exhausted) > 0 {
			given := cur
			given.parts = exhausted
			committed, ok := r.giveUp(ctx, b, given, ConditionRetryAttemptsExhausted)
			if !ok {
				r.settle(ctx, result)
				return nil, false
			}
			result.Discarded = offsetsOf(exhausted)
			maps.Copy(result.Committed, committed)
		}
		r.settle(ctx, result)
		if len(retry) == 0 {
			return nil, true
		}
		cur.parts = retry
		return []kafkaSpan{cur}, true
	}
}

// countRetries counts a failed attempt against each partition of rest,
// what is left of a span after it: the partitions whose
// MaximumRetryAttempts ran out are exhausted, the others are retried.
// The count belongs to a partition's first record: when that is no longer
// the record counted before, the commit moved (through a partial batch
// response, a bisected half that succeeded or an expiry), and the count
// starts again at 0 for the new first record, which has just failed its
// first attempt. The limit then applies as to any count, so 0 gives up
// without a retry: the count excludes the first invocation, as AWS says
// of MaximumRetryAttempts. AWS does not document when the count restarts
// (see the package documentation).
func (r *kafkaRun) countRetries(rest []kafkaPart) (retry, exhausted []kafkaPart) {
	limit := r.m.cfg.maxRetries()
	for _, p := range rest {
		if first := p.recs[0].rec.Offset; first != p.at {
			p.retries, p.at = 0, first
		}
		if limit != retryForever && p.retries >= limit {
			exhausted = append(exhausted, p)
			continue
		}
		p.retries++
		retry = append(retry, p)
	}
	return retry, exhausted
}

// oversized handles a record whose event alone is over MaxRequestSize,
// which Lambda cannot invoke: it is given up to the on-failure
// destination (ConditionMaximumPayloadSizeExceeded). Without one its
// partition is held: it is reported, and tried again after a wait, so
// nothing is lost while it stays there.
func (r *kafkaRun) oversized(ctx context.Context, b *kafkaBatch, cur kafkaSpan) ([]kafkaSpan, bool) {
	result := KafkaBatchResult{RequestID: newRequestID(), Offsets: offsetsOf(cur.parts), Outcome: OutcomeTooLarge,
		Err: fmt.Errorf("localesm: the record alone makes an event over %d bytes (MaxRequestSize)", MaxRequestSize)}
	if r.m.cfg.OnFailure == nil {
		result.Err = fmt.Errorf("%w; with no on-failure destination its partition is held", result.Err)
		r.settle(ctx, result)
		return []kafkaSpan{cur}, true
	}
	cur.requestID = result.RequestID
	committed, ok := r.giveUp(ctx, b, cur, ConditionMaximumPayloadSizeExceeded)
	if ok {
		result.Discarded, result.Committed = result.Offsets, committed
	}
	r.settle(ctx, result)
	return nil, ok
}

// expire gives up, in each partition of cur, the leading run of records
// older than MaximumRecordAge, and returns the rest; false when ctx was
// cancelled first. A record exactly MaximumRecordAge old is still
// invoked. Timestamps in a partition need not increase (a producer sets
// CREATE_TIME), so the first record not expired ends the run: an old
// record after it runs with it rather than be given up ahead of it, out
// of order.
func (r *kafkaRun) expire(ctx context.Context, b *kafkaBatch, cur kafkaSpan) (kafkaSpan, bool) {
	age := r.m.cfg.MaximumRecordAge
	if age == 0 {
		return cur, true
	}
	now := r.m.cfg.Now()
	var old, young []kafkaPart
	for _, p := range cur.parts {
		n := 0
		for n < len(p.recs) && now.Sub(p.recs[n].rec.Timestamp) > age {
			n++
		}
		o, y := p, p
		o.recs, y.recs = p.recs[:n], p.recs[n:]
		if len(o.recs) > 0 {
			old = append(old, o)
		}
		if len(y.recs) > 0 {
			young = append(young, y)
		}
	}
	if len(old) == 0 {
		return cur, true
	}
	expired := cur
	expired.parts = old
	if expired.requestID == "" {
		expired.requestID = newRequestID()
	}
	result := KafkaBatchResult{RequestID: expired.requestID, Offsets: offsetsOf(old), Outcome: OutcomeExpired, Attempt: cur.invocations,
		Err: fmt.Errorf("localesm: records older than MaximumRecordAge %v", age)}
	committed, ok := r.giveUp(ctx, b, expired, ConditionRecordAgeExceeded)
	if ok {
		result.Discarded, result.Committed = result.Offsets, committed
	}
	r.settle(ctx, result)
	cur.parts = young
	return cur, ok
}

// giveUp sends span's records to the on-failure destination, retrying
// until it succeeds, then counts them finished and commits. It returns
// false, having committed nothing, when ctx is cancelled first. Validate
// requires a destination wherever records can be given up.
func (r *kafkaRun) giveUp(ctx context.Context, b *kafkaBatch, span kafkaSpan, condition string) (map[string]int64, bool) {
	f := r.failure(span, condition)
	attrs := []slog.Attr{
		slog.String("aws_request_id", span.requestID),
		slog.String("condition", condition),
		slog.Any("offsets", offsetRanges(offsetsOf(span.parts))),
	}
	for failures := 1; ; failures++ {
		sctx, cancel := context.WithTimeout(ctx, ackTimeout)
		err := r.m.cfg.OnFailure.Send(sctx, f)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, false
		}
		r.log.LogAttrs(ctx, slog.LevelWarn, "localesm: send to the on-failure destination failed; retrying", append(attrs, slog.Any("error", err), slog.Int("failures", failures))...)
		if backoff.Sleep(ctx, retryWait(failures)) != nil {
			return nil, false
		}
	}
	r.log.LogAttrs(ctx, slog.LevelError, "localesm: records given up and sent to the on-failure destination", attrs...)
	return r.finish(ctx, b, span.parts), true
}

// failure describes span's records, given up for condition.
func (r *kafkaRun) failure(span kafkaSpan, condition string) KafkaFailure {
	cfg := r.m.cfg
	rec := KafkaOnFailureRecord{
		RequestContext: OnFailureRequestContext{RequestID: span.requestID, FunctionARN: cfg.FunctionARN, Condition: condition, ApproximateInvokeCount: span.invocations},
		Version:        "1.0",
		Timestamp:      formatFailureTime(cfg.Now()),
		KafkaBatchInfo: KafkaBatchInfo{
			BatchSize: span.len(), EventSourceARN: r.src.arn, BootstrapServers: r.src.bootstrap,
			PayloadSize: len(r.src.encode(span.parts)), RecordsInfo: map[string]KafkaRecordsInfo{},
		},
	}
	if span.status != nil {
		rec.ResponseContext = &OnFailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST"}
		if *span.status != StatusOK {
			rec.ResponseContext.FunctionError = "Unhandled"
		}
	}
	var records []KafkaFailedRecord
	for _, p := range span.parts {
		first, last := p.recs[0].rec, p.recs[len(p.recs)-1].rec
		rec.KafkaBatchInfo.RecordsInfo[p.tp.String()] = KafkaRecordsInfo{
			FirstRecordOffset: strconv.FormatInt(first.Offset, 10), LastRecordOffset: strconv.FormatInt(last.Offset, 10),
			FirstRecordTimestamp: formatFailureTime(first.Timestamp), LastRecordTimestamp: formatFailureTime(last.Timestamp),
		}
		for _, kr := range p.recs {
			records = append(records, KafkaFailedRecord{
				TopicPartition: p.tp.String(), Offset: kr.rec.Offset, Timestamp: kr.rec.Timestamp, Key: kr.rec.Key,
				Event: r.src.encode([]kafkaPart{{tp: p.tp, recs: []*kafkaRecord{kr}}}),
			})
		}
	}
	return KafkaFailure{Record: rec, Records: records}
}

// held keeps the parts whose partition the member still holds by the
// batch's assignment: a revoked partition's records are left to its new
// owner.
func (r *kafkaRun) held(parts []kafkaPart, epochs map[kafkaTP]uint64) []kafkaPart {
	r.mu.Lock()
	defer r.mu.Unlock()
	var kept []kafkaPart
	for _, p := range parts {
		if r.parts[p.tp].epoch == epochs[p.tp] {
			kept = append(kept, p)
		}
	}
	return kept
}

// cut splits parts at done: each partition's first done[tp] records, and
// the rest.
func cut(parts []kafkaPart, done map[kafkaTP]int) (finished, rest []kafkaPart) {
	for _, p := range parts {
		n := done[p.tp]
		if n > 0 {
			finished = append(finished, p.with(p.recs[:n]))
		}
		if n < len(p.recs) {
			rest = append(rest, p.with(p.recs[n:]))
		}
	}
	return finished, rest
}

func offsetsOf(parts []kafkaPart) map[string][]int64 {
	out := make(map[string][]int64, len(parts))
	for _, p := range parts {
		for _, rec := range p.recs {
			out[p.tp.String()] = append(out[p.tp.String()], rec.rec.Offset)
		}
	}
	return out
}

// offsetRanges sums offsets up for a log record: per topic-partition,
// "first-last (n records)".
func offsetRanges(offsets map[string][]int64) map[string]string {
	out := make(map[string]string, len(offsets))
	for tp, offs := range offsets {
		out[tp] = fmt.Sprintf("%d-%d (%d records)", offs[0], offs[len(offs)-1], len(offs))
	}
	return out
}

// finish counts parts' records finished and commits each partition of b
// whose contiguous finished prefix grew: up to its first record not
// finished (kafka.CommitOffsets), so after a partial batch response up to
// the lowest offset reported. It returns the offsets committed.
func (r *kafkaRun) finish(ctx context.Context, b *kafkaBatch, parts []kafkaPart) map[string]int64 {
	for _, p := range parts {
		for _, rec := range p.recs {
			b.completed[kafka.ItemIdentifier{TopicPartition: p.tp.String(), Offset: rec.rec.Offset}] = true
		}
	}
	offsets, err := kafka.CommitOffsets(b.records, b.completed)
	if err != nil { // cannot happen: the batch and its completions are the mapping's own
		r.log.Error("localesm: commit offsets", slog.Any("error", err))
		return map[string]int64{}
	}
	moved := map[kafkaTP]int64{}
	for tp := range b.epochs {
		if off := offsets[tp.String()]; off > b.committed[tp] {
			moved[tp] = off
		}
	}
	committed := map[string]int64{}
	for tp, off := range r.commit(ctx, moved, b.epochs) {
		b.committed[tp] = off
		committed[tp.String()] = off
	}
	return committed
}

// commit commits the offsets of the partitions the member still holds by
// the batch's assignment, retrying a failed commit within ackTimeout
// (work finished before a stop is still committed), and returns what it
// committed. A partition revoked since is not committed: its new owner
// starts from the last commit, and the records after it run again.
func (r *kafkaRun) commit(ctx context.Context, offsets map[kafkaTP]int64, epochs map[kafkaTP]uint64) map[kafkaTP]int64 {
	if len(offsets) == 0 {
		return nil
	}
	r.commitMu.Lock()
	defer r.commitMu.Unlock()
	held := map[kafkaTP]int64{}
	r.mu.Lock()
	for tp, off := range offsets {
		if r.parts[tp].epoch == epochs[tp] {
			held[tp] = off
		}
	}
	r.mu.Unlock()
	if len(held) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
	defer cancel()
	for failures := 1; ; failures++ {
		err := r.consumer.Commit(cctx, held)
		if err == nil {
			return held
		}
		r.log.Warn("localesm: kafka commit failed", slog.Any("error", err), slog.Int("failures", failures))
		if backoff.Sleep(cctx, retryWait(failures)) != nil {
			r.log.Error("localesm: kafka commit given up; the records after the last commit will run again", slog.Any("offsets", held))
			return nil
		}
	}
}

func (r *kafkaRun) settle(ctx context.Context, result KafkaBatchResult) {
	level := slog.LevelInfo
	if result.Outcome != OutcomeSuccess {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("aws_request_id", result.RequestID),
		slog.String("outcome", result.Outcome.String()),
		slog.Any("offsets", offsetRanges(result.Offsets)),
		slog.Int("attempt", result.Attempt),
	}
	if result.Bisected {
		attrs = append(attrs, slog.Bool("bisected", true))
	}
	if len(result.Committed) > 0 {
		attrs = append(attrs, slog.Any("committed", result.Committed))
	}
	if result.Err != nil {
		attrs = append(attrs, slog.Any("error", result.Err))
	}
	r.log.LogAttrs(ctx, level, "localesm: kafka batch settled", attrs...)
	if r.m.cfg.OnBatch != nil {
		r.m.cfg.OnBatch(result)
	}
}
