package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// Processor runs Kafka batches through a Handler, one lane per partition
// and lane key. It is safe for concurrent use; with p, err :=
// kafka.New(kafka.Config{Handler: h}), lambda.Start(p.Process) is a
// complete Kafka consumer.
type Processor struct {
	// cfg is the validated Config, with Now's default filled in (the
	// lane engine fills in its own fields' defaults).
	cfg Config
	// lanes runs the batches' lanes (Concurrency, the deadline margin and
	// the response reserve).
	lanes *lanes.Engine
	// batches are batches done with, whose room (the results, the
	// records' identifiers, the lanes) the next batches reuse. A batch
	// goes back only once nothing of it is in use: every handler has
	// returned, and the response is built. The records themselves are
	// never reused: a handler may keep a record's key or value.
	batches sync.Pool
}

// New returns a Processor with cfg. It fails with an error wrapping
// ErrInvalidConfig, naming the field, when cfg does not validate.
func New(cfg Config) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now // the lanes' own default for the deadline; this one for the timings
	}
	engine, err := lanes.New(cfg.lanes())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Processor{cfg: cfg, lanes: engine}, nil
}

// Process handles the batch and returns the records to deliver again: every
// record not completed (see the package documentation). It returns an
// error only for an invalid batch (see ErrInvalidBatch), having run
// nothing; Lambda then retries the whole batch.
func (p *Processor) Process(ctx context.Context, ev events.KafkaEvent) (EventResponse, error) {
	b, err := p.newBatch(ctx, ev)
	if err != nil {
		n := 0
		for _, recs := range ev.Records {
			n += len(recs)
		}
		lanes.LogContained(ctx, p.cfg.Logger, slog.LevelError, "kafka: batch refused", requestAttr(ctx), slog.Int("records", n), slog.Any("error", err))
		return EventResponse{}, err
	}
	b.Run(ctx)
	resp := response(b.checked, func(i int) bool { return b.Results[i].Outcome.Completed() })
	p.release(b)
	return resp, nil
}

// release lets go of everything b refers to but its room, and pools it.
func (p *Processor) release(b *batch) {
	b.Reset()
	clear(b.checked)
	b.p, b.checked, b.records, b.keyFailed = nil, b.checked[:0], nil, false
	b.lanes, b.held, b.heldErr = laneNames{}, QuarantineView{}, nil
	p.batches.Put(b)
}

// pending marks a record no lane has decided yet. Only a handler that
// called runtime.Goexit can leave one behind; the rest of its lane then
// counts as skipped after a failure.
const pending = lanes.Pending

// batch is one batch's records on the lane engine's Batch, which runs
// them (b is its lanes.Items) and holds their results.
type batch struct {
	lanes.Batch
	p       *Processor
	checked []checkedRecord // the records' identifiers, in Process's order
	records []Record
	// keyFailed: the lane key function panicked for a record, which is
	// decided (Panicked) before the run.
	keyFailed bool
	// lanes are the records' lane names (see keyedLane).
	lanes laneNames
	// ints is the room of the lane names' ends and partition indexes.
	ints []int

	// held is the quarantine's view of the batch (Config.Quarantine), and
	// heldErr the error that kept the batch from reading it.
	held    QuarantineView
	heldErr error
}

func (p *Processor) newBatch(ctx context.Context, ev events.KafkaEvent) (*batch, error) {
	b, _ := p.batches.Get().(*batch)
	if b == nil {
		b = new(batch)
	}
	checked, err := checkedInto(b.checked, ev)
	if err != nil {
		p.batches.Put(b)
		return nil, err
	}
	records, err := decode(checked)
	if err != nil {
		clear(checked)
		p.batches.Put(b)
		return nil, err
	}
	b.p, b.checked, b.records = p, checked, records
	log := p.cfg.Logger
	if log != nil && len(records) > 0 {
		// A logger that panics here keeps logging without the request id,
		// where each of its panics is contained too.
		_ = lanes.Guard(PanicInLogger, func() { log = log.With(requestAttr(ctx)) })
	}
	bc := lanes.BatchConfig{Logger: log, DeadLetter: p.cfg.DeadLetter != nil, Metrics: p.cfg.Metrics != nil, Quarantine: p.cfg.Quarantine != nil}
	p.lanes.Begin(&b.Batch, b, len(records), bc)
	b.lanes = b.laneKeys()
	b.Plan = p.lanes.Replan(b.Plan, len(records), func(i int) (string, bool) { return b.lanes.name(i), true })
	return b, nil
}

// Lane keys are the partition's index in the batch, then a kind: 'k' and
// the key, 'n' for the partition's null-key lane, 'x' for the records of a
// partition from one whose lane key function panicked. A decimal index
// followed by a letter is unambiguous whatever the key holds.
const (
	keyedLane  = 'k'
	nullLane   = 'n'
	brokenLane = 'x'
)

// laneKeys returns each record's lane name, all in one string (one
// allocation per batch, not one per record). Config.LaneKey runs on a
// goroutine of its own (guarded), resumed after a partition it panicked in.
func (b *batch) laneKeys() laneNames {
	n := len(b.records)
	// One allocation for the ends and the partitions' indexes, one for
	// the names, sized for the record keys.
	if cap(b.ints) < 2*n {
		b.ints = make([]int, 2*n)
	}
	ints := b.ints[:2*n]
	part := partitionIndexes(ints[n:], b.checked)
	l := laneNames{ends: ints[:0:n], buf: make([]byte, 0, nameBytes(b.records))}
	laneKey := b.p.cfg.LaneKey
	if laneKey == nil {
		for i := range n {
			l.buf = appendLaneName(l.buf, part[i], b.records[i].Key != nil, b.records[i].Key)
			l.ends = append(l.ends, len(l.buf))
		}
		return l.done()
	}
	for next := 0; next < n; {
		// next is advanced on the guarded goroutine, which guarded waits
		// for: after a panic it names the record the panic was for.
		pe := lanes.Guard(PanicInLaneKey, func() {
			for ; next < n; next++ {
				key, ok := laneKey(b.records[next])
				l.buf = appendLaneName(l.buf, part[next], ok, key)
				l.ends = append(l.ends, len(l.buf))
			}
		})
		if pe == nil {
			break
		}
		next = b.breakPartition(&l, part, next, pe)
	}
	return l.done()
}

// laneNames is the lane keys of a batch's records, in index order: buf
// (all, once done) holds them one after another, ends[i] where record i's
// ends.
type laneNames struct {
	buf  []byte
	all  string
	ends []int
}

// done makes the names one string, which name cuts without copying.
func (l laneNames) done() laneNames {
	l.all, l.buf = string(l.buf), nil
	return l
}

// name returns record i's lane name.
func (l *laneNames) name(i int) string {
	start := 0
	if i > 0 {
		start = l.ends[i-1]
	}
	return l.all[start:l.ends[i]]
}

// nameBytes is the room the default lane names of recs take: each key and
// a few bytes for the partition's index and the kind.
func nameBytes(recs []Record) int {
	n := 0
	for i := range recs {
		n += len(recs[i].Key) + 4
	}
	return n
}

// partitionIndexes sets part[i] to record i's partition's index in the
// batch, and returns part.
func partitionIndexes(part []int, recs []checkedRecord) []int {
	for i := 1; i < len(recs); i++ {
		part[i] = part[i-1]
		if recs[i].id.TopicPartition != recs[i-1].id.TopicPartition {
			part[i]++
		}
	}
	return part
}

// appendLaneName appends the lane key of a record of partition part:
// keyed (ok) or the partition's null-key lane.
func appendLaneName[K string | []byte](buf []byte, part int, ok bool, key K) []byte {
	buf = strconv.AppendInt(buf, int64(part), 10)
	if !ok {
		return append(buf, nullLane)
	}
	return append(append(buf, keyedLane), key...)
}

// breakPartition decides record i, whose lane key function panicked, as
// Panicked, and puts it and every later record of its partition in the
// partition's broken lane: their keys are unknown, so any of them may share
// a lane with it, and none may run before it does. It returns the index of
// the next partition's first record.
func (b *batch) breakPartition(l *laneNames, part []int, i int, pe *PanicError) int {
	b.keyFailed = true
	b.Results[i].Outcome, b.Results[i].Err = Panicked, pe
	end := partitionEnd(b.checked, i)
	for range end - i {
		l.buf = append(strconv.AppendInt(l.buf, int64(part[i]), 10), brokenLane)
		l.ends = append(l.ends, len(l.buf))
	}
	return end
}

func requestAttr(ctx context.Context) slog.Attr {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return slog.String("aws_request_id", lc.AwsRequestID)
	}
	return slog.Attr{}
}

// Refuse returns why keyed record i may not run: it carries another
// partition count than Config.PartitionCount (its key may have moved
// partition). A null-key record has no key order to lose (lanes.Refuser).
func (b *batch) Refuse(i int) error {
	if b.p.cfg.PartitionCount == 0 {
		return nil
	}
	if _, keyed := b.laneKeyOf(i); !keyed {
		return nil
	}
	return checkPartitionCount(&b.records[i], b.p.cfg.PartitionCount)
}

// Handle calls the handler with record i (lanes.Items).
func (b *batch) Handle(ctx context.Context, i int) error { return b.p.cfg.Handler(ctx, b.records[i]) }

// Quarantined reports whether record i's lane runs under the quarantine
// (lanes.Items).
func (b *batch) Quarantined(i int) bool { return b.quarantined(i) }

// DeadLetter stores record i, which failed permanently because of cause,
// with Config.DeadLetter (lanes.Items).
func (b *batch) DeadLetter(ctx context.Context, i int, cause error) error {
	if err := b.p.cfg.DeadLetter.Send(ctx, b.records[i], cause); err != nil {
		return fmt.Errorf("kafka: dead-letter %s offset %d: %w", b.checked[i].id.TopicPartition, b.checked[i].id.Offset, err)
	}
	return nil
}
