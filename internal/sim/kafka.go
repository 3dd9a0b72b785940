package sim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// Transport is what carries the commands and the events from the relay to
// the worker and the projector.
type Transport int

// The transports.
const (
	// TransportSQS: two SQS FIFO queues, the job as the message group (the
	// default, template.yaml's).
	TransportSQS Transport = iota
	// TransportKafka: two Kafka topics keyed by job id, consumed by
	// Lambda's Kafka event source mappings.
	TransportKafka
)

func (t Transport) String() string {
	switch t {
	case TransportSQS:
		return "sqs"
	case TransportKafka:
		return "kafka"
	}
	return fmt.Sprintf("Transport(%d)", int(t))
}

// The Kafka deployment the simulation runs.
const (
	commandsTopic = "commands"
	eventsTopic   = "events"
	// kafkaPollers is how many members each mapping's consumer group has
	// (Lambda's pollers); a rebalance moves a partition between them.
	kafkaPollers = 3
	// kafkaBatchSize is the most records a batch takes from one partition
	// without a batching window, and in all with one.
	kafkaBatchSize = 10
	// maxRetryAttempts is each mapping's MaximumRetryAttempts: what Lambda
	// applies to infinite retries with an on-failure destination
	// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html).
	maxRetryAttempts = 10
	// firstRetryWait and maxRetryWait bound the mapping's wait before it
	// retries a partition, doubling from one to the other. AWS does not
	// document Kafka's; without a wait, a retry would meet a crashed
	// attempt's live lease ten times in a row and give its command up.
	firstRetryWait = time.Second
	maxRetryWait   = 2 * time.Minute
	// activeSegment is how many of a partition's last offsets compaction
	// leaves alone: Kafka never cleans the active segment.
	activeSegment = 3
	clusterARN    = "arn:aws:kafka:eu-west-1:123456789012:cluster/sim/1"
)

// kafkaWorld is the Kafka transport of a world: the topics, the relay's
// producer settings and the two event source mappings.
type kafkaWorld struct {
	commands, events  *Topic
	worker, projector *mapping
	// txn: the relay writes each stream record's messages in a transaction
	// of their own, whose commit (or abort) marker takes an offset in
	// every partition it wrote to.
	txn bool
	// compacted: the topics are compacted (cleanup.policy=compact), and
	// compaction runs during the chaos phase.
	compacted bool
	// hostile holds the records no redrive can fix (a command naming
	// another tenant, an event that is not JSON): the operator discards
	// them from the quarantine or the on-failure destination.
	hostile map[*LogRecord]bool
	// copyOf: each redriven copy the quarantine's operator produced, and
	// the parked record it stands for.
	copyOf map[*LogRecord]*LogRecord
	// republished: each record the operator re-published from an
	// on-failure destination, and the record it was given up as.
	republished map[*LogRecord]*LogRecord
	// relayed: the relay's records; replay: the records a producer
	// replayed (header bombs).
	relayed []*LogRecord
	replay  map[*LogRecord]bool
	// esm: the event source mappings' settings, the seed's.
	esm esmSettings
	// change: the seed's change of the topics' partition count, if any.
	change partitionChange
}

// esmSettings are settings of Lambda's Kafka event source mappings the
// simulation draws per seed, and runs as pkg/localesm's mapping does.
type esmSettings struct {
	// bisect: BisectBatchOnFunctionError. A batch of two records or more
	// whose invocation failed (it crashed, lost its answer or timed out)
	// is split in halves, each run to its end before the next, without
	// using up a retry.
	bisect bool
	// window: MaximumBatchingWindow. A poller's batch waits until its
	// oldest record arrived window ago, or until it holds kafkaBatchSize
	// records; 0 is NoBatchingWindow, a batch of what a poll returned.
	window time.Duration
	// maxAge: MaximumRecordAge. Each partition's leading run of records
	// older than it goes to the on-failure destination without being
	// invoked; 0 for none.
	maxAge time.Duration
}

// mapping is a Kafka event source mapping as Lambda runs one: a consumer
// group on a topic, batches fetched per partition from the committed
// offset (at most one in flight per partition and ownership), a
// function's invocation per batch, and the partial batch response applied
// by committing each partition's contiguous completed prefix
// (kafka.CommitOffsets): the conservative reading, every record from the
// lowest reported offset is delivered again. A failed attempt (a record
// reported, a function error, a timeout) is retried after a wait, up to
// MaximumRetryAttempts; then the batch's records not completed go to the
// on-failure destination and the partition moves past the batch.
type mapping struct {
	kind    string // the function: "worker", "projector"
	topic   *Topic
	group   *Group
	proc    *kafka.Processor
	timeout time.Duration

	// inflight: each partition's batch in flight for its current
	// ownership. A batch whose partition moved (a rebalance) or whose
	// invocation timed out is no longer there, and runs on unseen.
	inflight map[int]*kbatch
	// running: the batch of each invocation that has not returned.
	running map[*invocation]*kbatch
	// failures: each partition's failed attempts in a row at its
	// committed offset; retryAt: no fetch of it before then.
	failures []int
	retryAt  []time.Time
	// deliveries counts each record's deliveries to an invocation, for the
	// trace and the stats: Lambda's Kafka event carries no count, and the
	// handlers get none.
	deliveries map[*LogRecord]int
	// done: a handler returned nil for the record; excused: the record
	// was sent to the on-failure destination.
	done, excused map[*LogRecord]bool
	onFailure     []*failedRecord
	// bisections: batches BisectBatchOnFunctionError split, in the order
	// they were split; split: the bisection holding each partition, which
	// nothing else fetches meanwhile.
	bisections []*bisection
	split      map[int]*bisection
	// newProc makes the mapping's processor for a partition count: a
	// deployment of a new count replaces it.
	newProc func(partitions int) (*kafka.Processor, error)
	// partitions is the count the processor checks records against.
	partitions int
}

// failedRecord is a record in a mapping's on-failure destination, and
// why it was given up (the condition Lambda's on-failure record names).
type failedRecord struct {
	rec   *LogRecord
	why   string
	state failState
}

// The conditions of records given up.
const (
	retriesExhausted = "RetryAttemptsExhausted"
	recordAgeExpired = "RecordAgeExceeded"
	payloadTooLarge  = "MaximumPayloadSizeExceeded"
)

type failState int

const (
	failParked    failState = iota // in the destination
	failRedriven                   // re-published to its topic
	failDiscarded                  // dropped by the operator: no redrive can fix it
)

// kbatch is one invocation's batch: records of one or more partitions of
// one poller.
type kbatch struct {
	inv   *invocation
	ev    events.KafkaEvent
	parts []kpart
	// split: the bisection whose first span the batch is, if any.
	split *bisection
	// lanes: the batch's records of each lane (partition and key), in
	// offset order; next: each lane's next record due to start.
	lanes map[laneID][]*LogRecord
	next  map[laneID]int
	// ended: the mapping is done with the batch (its answer applied, or its
	// invocation failed or timed out); a later answer is ignored.
	ended bool
}

// kpart is a batch's records of one partition, fetched from committed
// offset from under the ownership of epoch.
type kpart struct {
	p     int
	epoch int
	from  int64
	recs  []*LogRecord
}

// laneID is pkg/kafka's lane of a record: its partition and key, or its
// partition's null-key lane.
type laneID struct {
	p    int
	key  string
	null bool
}

func laneOf(r *LogRecord) laneID {
	return laneID{p: r.Partition, key: string(r.Key), null: len(r.Key) == 0}
}

// sameLane reports whether a and b are in one lane: laneOf without its
// allocation, for the checks' scans.
func sameLane(a, b *LogRecord) bool {
	return a.Partition == b.Partition && bytes.Equal(a.Key, b.Key)
}

// newKafka builds the Kafka transport: the topics, and the worker's and the
// projector's mappings, each running its handler under pkg/kafka's
// Processor.
func (w *World) newKafka(worker, projector kafka.Handler) error {
	k := &kafkaWorld{hostile: map[*LogRecord]bool{}, copyOf: map[*LogRecord]*LogRecord{}, republished: map[*LogRecord]*LogRecord{}, replay: map[*LogRecord]bool{}}
	partitions := []int{1, 2, 3, 4, 6}[w.rng.IntN(5)]
	k.txn = w.rng.IntN(3) == 0
	k.compacted = w.rng.IntN(4) == 0
	k.esm = esmSettings{
		bisect: w.rng.IntN(2) == 0,
		window: []time.Duration{0, 0, 500 * time.Millisecond, time.Second, 10 * time.Second}[w.rng.IntN(5)],
		maxAge: []time.Duration{0, 0, 10 * time.Minute, time.Hour}[w.rng.IntN(4)],
	}
	// One seed in four raises the topics' max.message.bytes (Kafka's
	// default is 1 MiB and 12 bytes), so that a record can be too large for
	// an event of its own.
	maxBytes := DefaultMaxMessageBytes
	if w.rng.IntN(4) == 0 {
		maxBytes = raisedMaxMessageBytes
	}
	k.change = w.drawPartitionChange(partitions)
	commands, cerr := NewTopic(TopicConfig{Name: commandsTopic, Partitions: partitions, Compacted: k.compacted, MaxMessageBytes: maxBytes, Now: w.clock.Now})
	evts, eerr := NewTopic(TopicConfig{Name: eventsTopic, Partitions: partitions, Compacted: k.compacted, MaxMessageBytes: maxBytes, Now: w.clock.Now})
	if err := errors.Join(cerr, eerr, checkKafkaThresholds()); err != nil {
		return err
	}
	k.commands, k.events = commands, evts
	w.kafka = k
	w.qstore = &faultQuarantine{Store: w.qmem, w: w}
	bodies, err := quarantine.NewS3Bodies(quarantine.S3BodiesConfig{Client: w.s3, Bucket: bucket})
	if err != nil {
		return err
	}
	var werr, perr error
	k.worker, werr = w.newMapping("worker", commands, workerTimeout, worker, commandsQuarantineAfter, bodies)
	k.projector, perr = w.newMapping("projector", evts, projectorTimeout, projector, eventsQuarantineAfter, bodies)
	if err := errors.Join(werr, perr); err != nil {
		return err
	}
	if w.cfg.Break == BreakCommitFence {
		k.worker.group.unfenced, k.projector.group.unfenced = true, true
	}
	w.logf("kafka: %d partitions a topic (%s), transactional relay %v, compacted topics %v, max.message.bytes %d; mappings: %+v",
		partitions, k.change, k.txn, k.compacted, maxBytes, k.esm)
	return nil
}

// checkKafkaThresholds holds the simulated deployment to what
// template-kafka.yaml's tests hold the real one to: the commands'
// quarantine threshold leaves a takeover its attempts (at least
// MaxGenerations + 2, lambdawire's least for the worker), and each is at
// most MaximumRetryAttempts + 1, so that the quarantine parks a record
// that fails in its handler before the mapping gives it up.
func checkKafkaThresholds() error {
	switch {
	case commandsQuarantineAfter < maxGenerations+2:
		return fmt.Errorf("sim: the commands' quarantine threshold %d is below MaxGenerations + 2 (%d)", commandsQuarantineAfter, maxGenerations+2)
	case max(commandsQuarantineAfter, eventsQuarantineAfter) > maxRetryAttempts+1:
		return fmt.Errorf("sim: a quarantine threshold (%d, %d) is above MaximumRetryAttempts + 1 (%d)", commandsQuarantineAfter, eventsQuarantineAfter, maxRetryAttempts+1)
	}
	return nil
}

// newMapping builds the mapping of a function on topic t: its handler h
// runs under pkg/kafka's Processor with the topic's quarantine
// (pkg/quarantine's KafkaQuarantine on the world's quarantine store,
// parking a key's record at its threshold-th attempt) and the topic's
// partition count, as lambdawire's kafkaQuarantined wires it; the
// topic's operator redrives through a RecordSender onto the topic.
func (w *World) newMapping(kind string, t *Topic, timeout time.Duration, h kafka.Handler, threshold int, bodies quarantine.BodyStore) (*mapping, error) {
	g, err := NewGroup(GroupConfig{Name: kind, Topic: t, Consumers: kafkaPollers})
	if err != nil {
		return nil, err
	}
	n := t.Partitions()
	m := &mapping{
		kind: kind, topic: t, group: g, timeout: timeout,
		inflight: map[int]*kbatch{}, running: map[*invocation]*kbatch{},
		failures: make([]int, n), retryAt: make([]time.Time, n),
		deliveries: map[*LogRecord]int{}, done: map[*LogRecord]bool{}, excused: map[*LogRecord]bool{},
		split: map[int]*bisection{},
	}
	// Handlers run one at a time, as the SQS processors' do: the world's
	// fibers need exactly one goroutine running.
	q, err := quarantine.NewKafka(quarantine.KafkaConfig{Store: w.qstore, Topic: t.Name, Bodies: bodies, Now: w.clock.Now})
	if err != nil {
		return nil, err
	}
	m.newProc = func(partitions int) (*kafka.Processor, error) {
		return kafka.New(kafka.Config{Handler: w.onRecord(m, h), Concurrency: 1, Now: w.clock.Now,
			Metrics:    func(bm kafka.BatchMetrics) { w.kafkaOutcomes(m, bm) },
			Quarantine: q, QuarantineThreshold: threshold, PartitionCount: partitions})
	}
	m.partitions = n
	if m.proc, err = m.newProc(n); err != nil {
		return nil, err
	}
	op := quarantine.OperatorConfig{Store: w.qstore, Queue: t.Name, Records: recordSender{w, t}, Now: w.clock.Now, Bodies: bodies}
	if err := op.Validate(); err != nil {
		return nil, err
	}
	w.sources = append(w.sources, source{name: t.Name, commands: t.Name == commandsTopic, operator: op})
	return m, nil
}

// kafkaOutcomes is the Kafka processors' metrics hook: it counts the
// records parked, dropped and skipped, and of the partition count's
// rules, the records parked for carrying another count than m's
// processor checks, and those of a key held in another partition than
// theirs, refused without running.
func (w *World) kafkaOutcomes(m *mapping, bm kafka.BatchMetrics) {
	w.stats.Parked += bm.Count(kafka.Parked)
	w.stats.Dropped += bm.Count(kafka.Dropped)
	w.stats.SkippedDeadline += bm.Count(kafka.SkippedDeadline)
	if w.kafka.change.to == 0 {
		return
	}
	for _, rm := range bm.Records {
		r := w.metricRecord(m, rm)
		switch {
		case r == nil || len(r.Key) == 0:
		case rm.Outcome == kafka.Parked && stampOf(r) != 0 && stampOf(r) != m.partitions:
			w.stats.CountHeld++
		case rm.Outcome == kafka.Failed && w.heldElsewhere(m, r):
			w.stats.MovedRefused++
		}
	}
}

// recordSender is topic t as the quarantine's operator produces the
// redriven copies to it (quarantine.RecordSender): each to the partition
// its hold is on, under its key, with its headers. A send may be slow,
// never refused (the redrive's retry would wait in real time).
type recordSender struct {
	w *World
	t *Topic
}

var _ quarantine.RecordSender = recordSender{}

func (s recordSender) SendRecord(ctx context.Context, c quarantine.KafkaCopy) error {
	s.w.slow(ctx, "send a copy to "+c.Topic)
	hs := make([]kafka.Header, len(c.Headers))
	for i, h := range c.Headers {
		hs[i] = kafka.Header{Key: h.Key, Value: h.Value}
	}
	origin := s.w.copiedRecord(s.t, hs)
	if origin == nil {
		s.w.violate("operator: a copy for %s-%d names no record the topic holds: %v", c.Topic, c.Partition, hs)
		return errors.New("sim: a copy of no record")
	}
	r, err := s.t.ProduceTo(int(c.Partition), c.Key, c.Value, hs...)
	if err != nil {
		return err
	}
	s.w.kafka.copyOf[r] = origin
	s.w.logf("  operator: copy of %s-%d offset %d sent as offset %d", origin.Topic, origin.Partition, origin.Offset, r.Offset)
	return nil
}

// copiedRecord is the record of t a copy with headers hs stands for (its
// quarantine.CopyHeader names it), nil if none.
func (w *World) copiedRecord(t *Topic, hs []kafka.Header) *LogRecord {
	c, ok := quarantine.ParseKafkaCopy(&kafka.Record{Headers: hs})
	if !ok {
		return nil
	}
	p, off, ok := quarantine.KafkaPosition(c.Sequence)
	if !ok || p >= int64(t.Partitions()) {
		return nil
	}
	return t.Partition(int(p)).Appended(off)
}

// partitionCount is the header the relay's producer stamps each record
// with, as internal/app/outbox/kafkaout's does: the partition count it
// partitions over, which the consumers' Config.PartitionCount checks.
func (k *kafkaWorld) partitionCount() kafka.Header {
	return kafka.Header{Key: kafka.PartitionCountHeader, Value: []byte(strconv.Itoa(k.change.relay))}
}

// topicOf is the topic the relay publishes a message of kind to.
func (k *kafkaWorld) topicOf(command bool) *Topic {
	if command {
		return k.commands
	}
	return k.events
}

// eventRecord is r as Lambda's Kafka event carries it.
func eventRecord(r *LogRecord) events.KafkaRecord { return eventRecordOf(r, true) }

// eventRecordOf is eventRecord, without the value unless withValue.
func eventRecordOf(r *LogRecord, withValue bool) events.KafkaRecord {
	rec := events.KafkaRecord{
		Topic: r.Topic, Partition: int64(r.Partition), Offset: r.Offset,
		Timestamp: events.MilliSecondsEpochTime{Time: r.Time}, TimestampType: "CREATE_TIME",
		Headers: []map[string]events.JSONNumberBytes{},
	}
	if withValue {
		rec.Value = base64.StdEncoding.EncodeToString(r.Value)
	}
	for _, h := range r.Headers {
		rec.Headers = append(rec.Headers, map[string]events.JSONNumberBytes{h.Key: h.Value})
	}
	if r.Key != nil {
		rec.Key = base64.StdEncoding.EncodeToString(r.Key)
	}
	return rec
}

// describe names a batch's records: partition, then offsets.
func (b *kbatch) describe(m *mapping) string {
	var parts []string
	for _, kp := range b.parts {
		offsets := make([]string, len(kp.recs))
		for i, r := range kp.recs {
			offsets[i] = strconv.FormatInt(r.Offset, 10)
			if n := m.deliveries[r]; n > 1 {
				offsets[i] += "#" + strconv.Itoa(n)
			}
		}
		parts = append(parts, fmt.Sprintf("%s-%d@%d [%s]", m.topic.Name, kp.p, kp.epoch, strings.Join(offsets, " ")))
	}
	return strings.Join(parts, ", ")
}

// answerKafka runs the batch and applies the invocation's answer, unless
// the invocation crashed, lost its answer or outlived its deadline.
func (w *World) answerKafka(ctx context.Context, m *mapping, b *kbatch) {
	inv := b.inv
	resp, err := m.proc.Process(ctx, b.ev)
	delete(m.running, inv)
	switch {
	case err != nil:
		w.violate("%s refused its batch: %v", m.kind, err)
		return
	case b.ended:
		w.logf("%s %s ends after its timeout: the mapping has moved on", m.kind, inv.id)
		return
	case w.clock.Now().After(inv.deadline):
		w.stats.TimedOut++
		w.logf("%s %s ends past its deadline: timed out, its batch is retried", m.kind, inv.id)
		w.failBatch(ctx, m, b)
		return
	case inv.dead:
		w.logf("%s %s crashed: its batch is retried", m.kind, inv.id)
		w.failBatch(ctx, m, b)
		return
	case inv.dropAnswer:
		// The mapping learns nothing until the invocation's timeout
		// (expire).
		w.stats.DroppedAnswers++
		w.logf("%s %s ends: its answer is lost", m.kind, inv.id)
		return
	}
	completed, ok := w.completedOf(m, b, resp)
	if !ok {
		return
	}
	commits, err := kafka.CommitOffsets(b.ev, completed)
	if err != nil {
		w.violate("%s: the commit of its batch: %v", m.kind, err)
		return
	}
	w.logf("%s %s ends: failed %v", m.kind, inv.id, resp.BatchItemFailures)
	b.ended = true
	for _, kp := range b.parts {
		w.endPart(ctx, m, b, kp, commits[kafka.TopicPartition(m.topic.Name, int64(kp.p))], completed)
	}
	if b.split != nil {
		m.advanceSplit(b.split)
	}
}

// completedOf is the batch's records the response leaves out: the ones the
// function completed. A response naming a record the batch does not hold
// is a bug of the processor.
func (w *World) completedOf(m *mapping, b *kbatch, resp kafka.EventResponse) (map[kafka.ItemIdentifier]bool, bool) {
	completed := map[kafka.ItemIdentifier]bool{}
	for _, kp := range b.parts {
		for _, r := range kp.recs {
			completed[kafka.ItemIdentifier{TopicPartition: kafka.TopicPartition(r.Topic, int64(r.Partition)), Offset: r.Offset}] = true
		}
	}
	for _, f := range resp.BatchItemFailures {
		if !completed[f.ItemIdentifier] {
			w.violate("%s %s reported %+v, which its batch does not hold", m.kind, b.inv.id, f.ItemIdentifier)
			return nil, false
		}
		completed[f.ItemIdentifier] = false
	}
	for id, ok := range completed {
		if !ok {
			delete(completed, id)
		}
	}
	return completed, true
}

// endPart applies the answer for one partition of the batch: the owner
// commits the contiguous completed prefix, which a rebalance since the
// fetch makes Kafka refuse; a commit that did not pass the batch's first
// record is a failed attempt.
func (w *World) endPart(ctx context.Context, m *mapping, b *kbatch, kp kpart, commit int64, completed map[kafka.ItemIdentifier]bool) {
	current := m.inflight[kp.p] == b
	if current {
		delete(m.inflight, kp.p)
	}
	old := m.group.Committed(kp.p)
	if err := m.group.Commit(kp.p, kp.epoch, commit); err != nil {
		w.stats.FencedCommits++
		w.logf("  %s-%d: the commit of offset %d is refused: %v", m.topic.Name, kp.p, commit, err)
		return
	}
	w.checkCommit(ctx, m, kp, old, commit)
	if !current {
		return
	}
	switch last := kp.recs[len(kp.recs)-1].Offset; {
	case commit > last:
		m.failures[kp.p], m.retryAt[kp.p] = 0, time.Time{}
	case commit > old:
		// The record at the new committed offset failed, once so far.
		m.failures[kp.p] = 1
		m.retryAt[kp.p] = w.clock.Now().Add(retryWait(1))
	default:
		w.retry(ctx, m, kp, completed)
	}
}

// failBatch is a function error, a crash or a timeout: nothing of the batch
// is committed. With BisectBatchOnFunctionError, its partitions still
// owned, two records or more, are split in halves; otherwise each is
// retried.
func (w *World) failBatch(ctx context.Context, m *mapping, b *kbatch) {
	b.ended = true
	var cur []kpart
	for _, kp := range b.parts {
		if m.inflight[kp.p] != b {
			continue // moved in a rebalance: the new owner goes on
		}
		delete(m.inflight, kp.p)
		cur = append(cur, kp)
	}
	if w.kafka.esm.bisect && recordsIn(cur) >= 2 {
		w.bisect(m, b, cur)
		return
	}
	for _, kp := range cur {
		w.retry(ctx, m, kp, nil)
	}
	if b.split != nil {
		m.advanceSplit(b.split)
	}
}

// retry counts a failed attempt of partition kp.p's batch. Past
// MaximumRetryAttempts, the batch's records not completed go to the
// on-failure destination (Lambda sends the failed records there) and the
// partition is committed past the batch; otherwise it waits, then is
// fetched again from its committed offset (or, in a bisection, its span
// runs again).
func (w *World) retry(ctx context.Context, m *mapping, kp kpart, completed map[kafka.ItemIdentifier]bool) {
	p := kp.p
	m.failures[p]++
	w.stats.KafkaRetries++
	if m.failures[p] <= maxRetryAttempts {
		m.retryAt[p] = w.clock.Now().Add(retryWait(m.failures[p]))
		return
	}
	w.stats.GaveUp++
	w.giveUp(ctx, m, kp, retriesExhausted, completed)
	m.failures[p], m.retryAt[p] = 0, time.Time{}
}

// retryWait is the mapping's wait before the nth retry of a partition.
func retryWait(n int) time.Duration {
	if n > 8 {
		return maxRetryWait
	}
	return min(firstRetryWait<<(n-1), maxRetryWait)
}

// expire has the mapping time out the invocations in flight past their
// deadline, as Lambda does: their batches are retried.
func (w *World) expire(ctx context.Context, m *mapping) {
	now := w.clock.Now()
	for p := range m.topic.Partitions() {
		b := m.inflight[p]
		if b == nil || b.ended || !now.After(b.inv.deadline) {
			continue
		}
		w.stats.TimedOut++
		w.logf("%s %s timed out: the mapping retries its batch", m.kind, b.inv.id)
		w.failBatch(ctx, m, b)
	}
}

// onRecord is h, a handler of the pipeline's for Kafka records
// (worker.Worker.HandleRecord, projection.Projector.HandleRecord), with
// each start checked against its lane's order and each completion
// recorded.
func (w *World) onRecord(m *mapping, h kafka.Handler) kafka.Handler {
	return func(ctx context.Context, rec kafka.Record) error {
		r := m.topic.Partition(int(rec.Partition)).Appended(rec.Offset)
		if r == nil {
			w.violate("%s was handed %s offset %d, which the log never held", m.kind, rec.TopicPartition(), rec.Offset)
			return errors.New("sim: a record the log never held")
		}
		w.checkStart(ctx, m, r)
		if err := h(ctx, rec); err != nil {
			w.logf("  %s-%d offset %d failed: %v", r.Topic, r.Partition, r.Offset, err)
			return err
		}
		m.done[r] = true
		if o := w.kafka.copyOf[r]; o != nil {
			m.done[o] = true // a copy stands for its parked record
			w.logf("  %s-%d offset %d processed (the copy of offset %d)", r.Topic, r.Partition, r.Offset, o.Offset)
			return nil
		}
		w.logf("  %s-%d offset %d processed", r.Topic, r.Partition, r.Offset)
		return nil
	}
}

// checkStart checks a record about to start in the batch of ctx's
// invocation: within the batch, its lane's records start in offset order,
// none passed over but those the quarantine completes without running
// (passable); and every earlier record of its lane in the partition
// ran to completion (itself, or its redriven copy), or was given up on (the
// on-failure destination) or discarded by the operator, or compacted or
// aborted away. A record the quarantine parked has not run: a held key's
// later records wait for its copy. A redriven copy is checked where the
// record it stands for is: it runs only after every earlier record of its
// key did. A redelivery starts a lane over from the committed offset, so
// the first check is per batch, and the second spans batches, ownerships,
// zombies and redrives. After a partition count change a key's records
// are in two partitions: a record the relay stamped with its count runs
// only after every earlier stamped record of its key in the other did
// (orderedAfter).
func (w *World) checkStart(ctx context.Context, m *mapping, r *LogRecord) {
	lane := laneOf(r)
	if b := m.running[invocationOf(ctx)]; b != nil {
		recs, i := b.lanes[lane], b.next[lane]
		for i < len(recs) && recs[i] != r && w.passable(ctx, recs[i]) {
			i++
		}
		if i >= len(recs) || recs[i] != r {
			due := int64(-1)
			if i < len(recs) {
				due = recs[i].Offset
			}
			w.violate("%s %s: %s-%d offset %d (key %q) started out of its lane's order in the batch (next due: offset %d)",
				m.kind, b.inv.id, r.Topic, r.Partition, r.Offset, r.Key, due)
			return
		}
		b.next[lane] = i + 1
	} else {
		w.violate("%s: %s-%d offset %d started outside a batch the mapping sent", m.kind, r.Topic, r.Partition, r.Offset)
		return
	}
	at, what := r, "started"
	if o := w.kafka.copyOf[r]; o != nil {
		at, what = o, fmt.Sprintf("started as the copy at offset %d", r.Offset)
	}
	earlier := m.topic.KeyRecords(at.Key)
	if len(at.Key) == 0 {
		earlier = m.topic.Partition(at.Partition).All()
	}
	for _, o := range earlier {
		if o.Seq >= at.Seq {
			break
		}
		if sameLane(o, at) || w.kafka.orderedAfter(at, o) {
			if w.kafka.copyOf[o] == nil && !w.ran(ctx, m, o) {
				w.violate("%s: %s-%d offset %d (key %q) %s before %s-%d offset %d of its key, which has not run (%s)",
					m.kind, at.Topic, at.Partition, at.Offset, at.Key, what, o.Topic, o.Partition, o.Offset, w.parkedState(ctx, o))
				return
			}
		}
	}
}

// orderedAfter reports whether record at, of another partition than o
// and of its key, produced after it, must start only after o ran: both
// carry the relay's partition count stamp; o is not a re-publish from an
// on-failure destination (it stands for a record given up, which at need
// not wait for), and at is not the re-publish of a record given up
// before o was produced. Records without the stamp
// (another producer's) are not checked by the consumers, and are not held
// to the order either (pkg/kafka's documented scope), nor are a
// producer's replays of the relay's records.
func (k *kafkaWorld) orderedAfter(at, o *LogRecord) bool {
	if at.Partition == o.Partition || stampOf(at) == 0 || stampOf(o) == 0 || k.replayed(at) || k.replayed(o) || k.republished[o] != nil {
		return false
	}
	origin := k.republished[at]
	return origin == nil || origin.Seq > o.Seq
}

// replayed reports whether r is a producer's replay of a relay's record,
// or the re-publish of one: not the relay's own.
func (k *kafkaWorld) replayed(r *LogRecord) bool { return k.replay[r] || k.replay[k.republished[r]] }

// passable reports whether the processor may complete record r of a batch
// without running it: a redriven copy (dropped when stale), or a record
// the quarantine has (parked now or before, and dropped when delivered
// again).
func (w *World) passable(ctx context.Context, r *LogRecord) bool {
	if w.kafka.copyOf[r] != nil {
		return true
	}
	_, ok := w.kafkaItem(ctx, r)
	return ok
}

// ran reports whether record r of the log (not a copy) needs nothing more
// before a later record of its key runs: it, or its copy, completed; it was
// given up on, or discarded from the quarantine; or it is gone from the
// log without having been visible to a consumer (aborted), or after a
// later record of its key (compacted) and before the quarantine parked it.
func (w *World) ran(ctx context.Context, m *mapping, r *LogRecord) bool {
	if m.done[r] || m.excused[r] || r.Aborted {
		return true
	}
	switch st, ok := w.kafkaItem(ctx, r); {
	case ok:
		return st == quarantine.StatusDiscarded || st == quarantine.StatusDone
	default:
		return r.Compacted
	}
}

// kafkaItem is the status of r's item in the quarantine's store, read
// without faults, and whether it has one: the quarantine parked it.
func (w *World) kafkaItem(ctx context.Context, r *LogRecord) (quarantine.Status, bool) {
	if r.Key == nil {
		return "", false // null-key lanes are not quarantined
	}
	seq, err := quarantine.KafkaSeq(int64(r.Partition), r.Offset)
	if err != nil {
		return "", false
	}
	k := quarantine.ItemKey{Group: quarantine.KafkaGroup(string(r.Key)), Sequence: seq}
	_, items, err := w.qmem.Read(context.WithoutCancel(ctx), r.Topic, nil, []quarantine.ItemKey{k})
	p, ok := items[k]
	if err != nil || !ok {
		return "", false
	}
	return p.Status, true
}

// parkedState names r's item in the quarantine, for a violation's message.
func (w *World) parkedState(ctx context.Context, r *LogRecord) string {
	if st, ok := w.kafkaItem(ctx, r); ok {
		return "the quarantine has it " + string(st)
	}
	return "the quarantine does not have it"
}

// settled reports whether the mapping may commit past record r: it ran to
// completion, was given up on, or is gone from the log (aborted,
// compacted); or the quarantine has it (parked, which the processor
// completes, and then done or discarded); or it is a redriven copy, which
// the processor completes without running when it is stale.
func (w *World) settled(ctx context.Context, m *mapping, r *LogRecord) bool {
	return m.done[r] || m.excused[r] || r.Compacted || r.Aborted || w.passable(ctx, r)
}

// checkCommit checks a commit of kp's batch that landed over committed
// offset old: the batch was fetched from old (no other member committed
// the partition meanwhile: a member whose ownership ended cannot commit),
// the committed offset never goes back, and it never passes a record that
// is not settled.
func (w *World) checkCommit(ctx context.Context, m *mapping, kp kpart, old, commit int64) {
	p := kp.p
	switch {
	case old != kp.from:
		w.violate("group %s: a commit of %s-%d's batch fetched from offset %d landed over committed offset %d: another member committed the partition meanwhile",
			m.group.Name, m.topic.Name, p, kp.from, old)
		return
	case commit < old:
		w.violate("group %s: %s-%d's committed offset went back from %d to %d", m.group.Name, m.topic.Name, p, old, commit)
		return
	}
	for _, r := range m.topic.Partition(p).All() {
		if r.Offset >= commit {
			break
		}
		if r.Offset >= old && !w.settled(ctx, m, r) {
			w.violate("group %s committed %s-%d up to offset %d, past offset %d (key %q), which no invocation completed",
				m.group.Name, m.topic.Name, p, commit, r.Offset, r.Key)
			return
		}
	}
}

// rebalance moves a partition of a mapping's group to another poller,
// mostly one with a batch in flight: that batch's invocation runs on, and
// its commit will be refused; the new owner fetches from the committed
// offset at once.
func (w *World) rebalance() {
	m := w.kafka.worker
	if w.rng.IntN(2) == 0 {
		m = w.kafka.projector
	}
	var busy []int
	for p := range m.topic.Partitions() {
		if m.inflight[p] != nil {
			busy = append(busy, p)
		}
	}
	p := w.rng.IntN(m.topic.Partitions())
	if len(busy) > 0 && w.rng.IntN(4) > 0 {
		p = busy[w.rng.IntN(len(busy))]
	}
	from, _ := m.group.Owner(p)
	to := m.group.Move(p)
	w.stats.Rebalances++
	if b := m.inflight[p]; b != nil {
		delete(m.inflight, p)
		w.stats.MidBatchRebalances++
		w.logf("kafka: rebalance of %s: %s-%d moves from %s to %s, with %s's batch in flight", m.group.Name, m.topic.Name, p, from, to, b.inv.id)
	} else {
		w.logf("kafka: rebalance of %s: %s-%d moves from %s to %s", m.group.Name, m.topic.Name, p, from, to)
	}
	m.failures[p], m.retryAt[p] = 0, time.Time{}
	m.unsplit(p)
}

// compact runs compaction on a partition of a topic: below the active
// segment, each record with a later record of its key goes.
func (w *World) compact() {
	t := w.kafka.commands
	if w.rng.IntN(2) == 0 {
		t = w.kafka.events
	}
	part := t.Partition(w.rng.IntN(t.Partitions()))
	for _, r := range part.Compact(part.End() - activeSegment) {
		w.stats.Compacted++
		w.logf("kafka: compaction removes %s-%d offset %d (key %s)", r.Topic, r.Partition, r.Offset, r.Key)
	}
}

// kafkaFault is a step of the Kafka transport's own: the operator at the
// quarantine or at the on-failure destinations, a rebalance, compaction,
// or a step of the seed's partition count change.
func (w *World) kafkaFault() {
	switch w.rng.IntN(5) {
	case 0:
		w.redrive(false)
	case 1:
		w.redriveFailed(false)
	case 2:
		w.rebalance()
	case 3:
		if w.kafka.compacted {
			w.compact()
		} else {
			w.rebalance()
		}
	default:
		if !w.changePartitions(false) {
			w.rebalance()
		}
	}
}

// redriveFailed has the operator go through the on-failure destinations
// (all of them, or some records): a record no redrive can fix, or a
// quarantine's redriven copy (its record is still the quarantine's), is
// discarded, any other re-published to its topic, under its key, after
// the cause of an early command is fixed (with all, always). The
// destination is the backstop behind the quarantine, as SQS's dead-letter
// queue is: it gets what the quarantine could not take (a record without a
// key, whose lane is not quarantined; a record whose parking failed
// through an outage of the quarantine's store until the mapping's retries
// ran out; a record whose crashes or timeouts the quarantine does not
// count). Meanwhile a given-up record's later records of its key ran
// without it.
func (w *World) redriveFailed(all bool) {
	if w.kafka.change.redrivesWait() {
		return // the procedure deals with the destinations once the new count is deployed
	}
	for _, m := range []*mapping{w.kafka.worker, w.kafka.projector} {
		for _, f := range m.onFailure {
			if f.state != failParked || (!all && w.rng.IntN(2) == 0) {
				continue
			}
			r := f.rec
			if w.kafka.hostile[r] || w.kafka.copyOf[r] != nil {
				// A redriven copy stands for a record the quarantine still
				// has: its redrive sends the copy again.
				f.state = failDiscarded
				w.stats.Discarded++
				w.logf("operator: discards %s-%d offset %d from %s's on-failure destination", r.Topic, r.Partition, r.Offset, m.kind)
				continue
			}
			if m == w.kafka.worker && (all || w.rng.IntN(2) == 0) {
				w.fixEarly(string(r.Key))
			}
			f.state = failRedriven
			c, err := m.topic.Produce(r.Key, r.Value, r.Headers...)
			if err != nil {
				w.fail(fmt.Errorf("the operator's redrive from %s's on-failure destination: %w", m.kind, err))
				return
			}
			w.kafka.republished[c] = cmp.Or(w.kafka.republished[r], r)
			w.stats.Redrives++
			w.logf("operator: redrives %s-%d offset %d as %s-%d offset %d", r.Topic, r.Partition, r.Offset, c.Topic, c.Partition, c.Offset)
		}
	}
}

// fixEarly creates the job of an early command for job id, if there is one
// and its job does not exist yet.
func (w *World) fixEarly(id string) {
	for _, in := range w.intents {
		if in.poison && in.jobID == id && w.journal.peek(context.Background(), in.jobID) == nil {
			w.post(in, in.spec)
		}
	}
}

// inject sends a message the relay did not publish (an early command, a
// hostile or forged one) into the commands or the events, with group as its
// group or key (none for a null key with Kafka); hostile marks one no
// redrive can fix. A compacted topic refuses a record without a key, as
// Kafka's brokers do: the producer gets the error, and nothing is written.
func (w *World) inject(command bool, group, body, dedup string, hostile bool) {
	if hostile {
		w.hostile[dedup] = true
	}
	if w.kafka == nil {
		q := w.evts
		if command {
			q = w.commands
		}
		q.Send(group, body, dedup, nil)
		return
	}
	var key []byte
	if group != "" {
		key = []byte(group)
	}
	r, err := w.kafka.topicOf(command).Produce(key, []byte(body))
	if err != nil {
		w.stats.RefusedNullKeys++
		w.logf("  → refused: %v", err)
		return
	}
	if hostile {
		w.kafka.hostile[r] = true
	}
	w.logf("  → %s-%d offset %d", r.Topic, r.Partition, r.Offset)
}

// copiesPending reports whether redriven copies of the key group on
// topic name may still be processed: one is at or after its partition's
// committed offset (waiting, or in a batch in flight). A new epoch would
// drop them. (An SQS queue's copies are received before the settling
// phase redrives: never.) Only the key's copies count, not the group's
// lag: a record of the key in another partition than its hold's (after a
// partition count change), refused while the hold stands, keeps the group
// lagging until the hold is redriven.
func (w *World) copiesPending(name, group string) bool {
	if w.kafka == nil {
		return false
	}
	m := w.kafka.worker
	if name != commandsTopic {
		m = w.kafka.projector
	}
	for p := range m.topic.Partitions() {
		part := m.topic.Partition(p)
		from := m.group.Committed(p)
		for _, r := range part.Fetch(from, int(part.Visible(from))) {
			if w.kafka.copyOf[r] != nil && quarantine.KafkaGroup(string(r.Key)) == group {
				return true
			}
		}
	}
	return false
}

// isHostile reports whether the parked message p is one no redrive can
// fix: an SQS message by its deduplication id, a Kafka record by its
// place in its topic.
func (w *World) isHostile(p quarantine.Parked) bool {
	if p.Kafka == nil || w.kafka == nil {
		return w.hostile[p.DeduplicationID]
	}
	part, off, ok := quarantine.KafkaPosition(p.Sequence)
	t := w.kafka.topicOf(p.Queue == commandsTopic)
	if !ok || part >= int64(t.Partitions()) {
		return false
	}
	r := t.Partition(int(part)).Appended(off)
	return r != nil && w.kafka.hostile[r]
}

// nextKafkaWake is when something of the Kafka transport can move again:
// a partition's retry, or a timeout of an invocation in flight.
func (w *World) nextKafkaWake() (time.Time, bool) {
	var next time.Time
	earlier := func(t time.Time) {
		if t.After(w.clock.Now()) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, m := range []*mapping{w.kafka.worker, w.kafka.projector} {
		for p := range m.topic.Partitions() {
			switch b := m.inflight[p]; {
			case b != nil:
				earlier(b.inv.deadline.Add(time.Millisecond))
			case m.split[p] != nil:
				earlier(m.retryAt[p])
			case m.group.LagOf(p) > 0 && w.kafka.esm.window > 0:
				earlier(later(m.retryAt[p], w.windowEnd(m, []int{p})))
			case m.group.LagOf(p) > 0:
				earlier(m.retryAt[p])
			}
		}
	}
	return next, !next.IsZero()
}

// kafkaUnsettled says what of the Kafka transport still moves: a group's
// lag, a batch in flight, a record in an on-failure destination, a key
// the quarantine holds.
func (w *World) kafkaUnsettled() []string {
	var out []string
	for _, m := range []*mapping{w.kafka.worker, w.kafka.projector} {
		if lag := m.group.Lag(); lag > 0 {
			out = append(out, fmt.Sprintf("group %s lags %d", m.group.Name, lag))
		}
		for p := range m.topic.Partitions() {
			if b := m.inflight[p]; b != nil {
				out = append(out, fmt.Sprintf("%s's %s in flight on %s-%d", m.kind, b.inv.id, m.topic.Name, p))
			}
		}
		for _, f := range m.onFailure {
			if f.state == failParked {
				out = append(out, fmt.Sprintf("%s-%d offset %d in %s's on-failure destination", f.rec.Topic, f.rec.Partition, f.rec.Offset, m.kind))
			}
		}
		out = append(out, w.heldGroups(m.topic.Name)...)
	}
	return out
}

// checkLogEnd checks the settled Kafka transport: every group's lag is 0,
// no batch is in flight, every record of every partition ran to completion
// (itself, or the redriven copy of it the quarantine parked), or was given
// up on and then redriven or discarded, or discarded from the quarantine,
// or compacted or aborted away; every key the quarantine held is released
// with nothing parked, and no on-failure destination holds a record.
func (w *World) checkLogEnd() {
	ctx := context.Background()
	for _, m := range []*mapping{w.kafka.worker, w.kafka.projector} {
		if lag := m.group.Lag(); lag != 0 {
			w.violate("group %s lags %d at the end", m.group.Name, lag)
		}
		if len(m.bisections) > 0 {
			w.violate("%s still has %d bisected batches to run at the end", m.kind, len(m.bisections))
		}
		groups := map[string]bool{}
		for p := range m.topic.Partitions() {
			for _, r := range m.topic.Partition(p).All() {
				if w.kafka.copyOf[r] == nil && !w.ran(ctx, m, r) {
					w.violate("%s-%d offset %d (key %q) was committed but never completed (%s)", r.Topic, r.Partition, r.Offset, r.Key, w.parkedState(ctx, r))
				}
				w.stats.Aborted += boolInt(r.Aborted)
				if r.Key != nil {
					groups[quarantine.KafkaGroup(string(r.Key))] = true
				}
			}
		}
		w.checkReleased(ctx, m.topic.Name, groups)
		for _, f := range m.onFailure {
			if f.state == failParked {
				w.violate("%s-%d offset %d is still in %s's on-failure destination", f.rec.Topic, f.rec.Partition, f.rec.Offset, m.kind)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
