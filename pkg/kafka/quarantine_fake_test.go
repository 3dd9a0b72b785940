package kafka_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/lanes/lanestest"
)

// qCall is one call the processor made to a fakeQuarantine: Key is the
// lane key (empty for check), Items the records named ("t-0/5").
type qCall = lanestest.Call

// fakeQuarantine is a scripted kafka.Quarantine that records every call.
//
// Check returns view. Park, Done and Failed then follow each key's hold
// from there, as a store would: Park with hold makes it Held on its
// records' partition (keeping its epoch and attempts), Park without leaves
// it, Done sets it to after[copy] when the test gave one, else leaves it,
// and Failed counts the record's attempts. script, when set, sees every
// call first (concurrently, from the lanes): an error it returns is the
// call's error, and it may panic or call runtime.Goexit instead.
//
// The fake checks what the interface and the processor promise about the
// calls; RequireSound fails the test on a breach.
type fakeQuarantine struct {
	lanestest.CallLog
	view   kafka.QuarantineView
	after  map[string]kafka.Hold
	script func(c qCall) error

	// Each key's hold and lane order, guarded by the CallLog's lock.
	lanestest.HeldKeys[kafka.TopicKey, kafka.Hold]
}

func names(recs []*kafka.Record) []string {
	return lanestest.Names(recs, func(r *kafka.Record) string { return name(*r) })
}

func (q *fakeQuarantine) Check(ctx context.Context, recs []kafka.KeyedRecord) (kafka.QuarantineView, error) {
	ns, keys := make([]string, len(recs)), make([]kafka.TopicKey, len(recs))
	for i, r := range recs {
		ns[i], keys[i] = name(*r.Record), r.Key
	}
	c := &qCall{Method: "check", Items: ns, CtxErr: ctx.Err()}
	err := q.Do(c, q.script, func() {
		for _, r := range recs {
			if r.Key.Topic != r.Record.Topic {
				q.Violate("check got %s under topic %q", name(*r.Record), r.Key.Topic)
			}
		}
		q.Checked(&q.CallLog, ns, keys, q.view.Holds)
	}, func() {})
	if err != nil {
		return kafka.QuarantineView{}, err
	}
	return q.view, nil
}

func (q *fakeQuarantine) Park(ctx context.Context, key kafka.TopicKey, recs []*kafka.Record, cause error, hold bool) (kafka.Hold, error) {
	c := &qCall{Method: "park", Key: key.Key, Items: names(recs), Cause: cause, Hold: hold, CtxErr: ctx.Err()}
	var got kafka.Hold
	err := q.Do(c, q.script, func() {
		q.InLaneOrder(&q.CallLog, key, c.Items)
		for _, r := range recs {
			if d, ok := q.view.Records[r.ID()]; ok {
				q.Violate("park got %s, which check said to handle as %+v", name(*r), d)
			}
			if r.Partition != recs[0].Partition {
				q.Violate("park got records of two partitions")
			}
		}
		switch cur := q.Holds[key]; {
		case len(recs) == 0 && !hold:
			q.Violate("park of key %v with neither records nor hold", key)
		case hold && cause == nil:
			q.Violate("park of key %v holds it without a cause", key)
		case !hold && cur.State == kafka.NotHeld:
			q.Violate("park of key %v without hold, but the key is not held", key)
		case !hold && cause != nil:
			q.Violate("park of key %v without hold has cause %v", key, cause)
		case cur.State != kafka.NotHeld && len(recs) > 0 && recs[0].Partition != cur.Partition:
			q.Violate("park of key %v from partition %d, held from %d", key, recs[0].Partition, cur.Partition)
		}
	}, func() {
		cur := q.Holds[key]
		if hold {
			part := cur.Partition
			if len(recs) > 0 && cur.State == kafka.NotHeld {
				part = recs[0].Partition
			}
			q.Holds[key] = kafka.Hold{State: kafka.Held, Epoch: cur.Epoch, Next: cur.Next, Partition: part, Attempts: cur.Attempts}
		}
		got = q.Holds[key]
	})
	return got, err
}

func (q *fakeQuarantine) Done(ctx context.Context, key kafka.TopicKey, rec *kafka.Record) (kafka.Hold, error) {
	c := &qCall{Method: "done", Key: key.Key, Items: []string{name(*rec)}, CtxErr: ctx.Err()}
	var got kafka.Hold
	err := q.Do(c, q.script, func() {
		q.InLaneOrder(&q.CallLog, key, c.Items)
		d := q.view.Records[rec.ID()]
		if cur := q.Holds[key]; !d.Copy || cur.State != kafka.Draining || cur.Epoch != d.Epoch || cur.Next != d.Of {
			q.Violate("done for %s (%+v) while key %v is %+v", name(*rec), d, key, cur)
		}
	}, func() {
		if h, ok := q.after[name(*rec)]; ok {
			h.Attempts = q.Holds[key].Attempts // a store keeps them
			q.Holds[key] = h
		}
		got = q.Holds[key]
	})
	return got, err
}

func (q *fakeQuarantine) Failed(ctx context.Context, key kafka.TopicKey, hold kafka.Hold, rec *kafka.Record, cause error) (kafka.Attempts, error) {
	c := &qCall{Method: "failed", Key: key.Key, Items: []string{name(*rec)}, Cause: cause, CtxErr: ctx.Err()}
	var got kafka.Attempts
	err := q.Do(c, q.script, func() {
		// In lane order, but not past it: the record counted may be parked next.
		q.NotPast(&q.CallLog, key, c.Items[0])
		if cur := q.Holds[key]; cur != hold {
			q.Violate("failed for %s with hold %+v, the key's is %+v", name(*rec), hold, cur)
		}
		if cause == nil {
			q.Violate("failed for %s without a cause", name(*rec))
		}
	}, func() {
		h := q.Holds[key]
		h.Attempts = kafka.Attempts{Partition: rec.Partition, Offset: rec.Offset, Failed: h.Attempts.Of(rec) + 1, Cause: cause.Error()}
		q.Holds[key] = h
		got = h.Attempts
	})
	return got, err
}

// HoldOf is key's hold (of topic t) as the calls so far left it.
func (q *fakeQuarantine) HoldOf(key string) kafka.Hold {
	q.Lock()
	defer q.Unlock()
	return q.Holds[tk(key)]
}

// tk is key of topic t.
func tk(key string) kafka.TopicKey { return kafka.TopicKey{Topic: "t", Key: key} }

// specID is the identifier of record "t-0/5".
func specID(t testing.TB, spec string) kafka.ItemIdentifier {
	t.Helper()
	r := parseSpec(t, spec)
	return kafka.ItemIdentifier{TopicPartition: kafka.TopicPartition(r.Topic, r.Partition), Offset: r.Offset}
}

// dispositions maps "t-0/5" to its disposition.
func dispositions(t testing.TB, ds map[string]kafka.Disposition) map[kafka.ItemIdentifier]kafka.Disposition {
	out := map[kafka.ItemIdentifier]kafka.Disposition{}
	for s, d := range ds {
		out[specID(t, s)] = d
	}
	return out
}

func heldOn(partition, epoch int64) kafka.Hold {
	return kafka.Hold{State: kafka.Held, Epoch: epoch, Partition: partition}
}

// draining is a hold of partition 0 draining under epoch, next at offset next.
func draining(epoch, next int64) kafka.Hold {
	return kafka.Hold{State: kafka.Draining, Epoch: epoch, Next: next}
}

func copyOf(epoch, of int64) kafka.Disposition {
	return kafka.Disposition{Copy: true, Epoch: epoch, Of: of}
}

// failedBefore is a hold that counts n failed attempts of the record at
// partition and offset.
func failedBefore(partition, offset int64, n int) kafka.Hold {
	return kafka.Hold{Attempts: kafka.Attempts{Partition: partition, Offset: offset, Failed: n, Cause: "busy before"}}
}

// errPanics makes the test handler panic; errGoexit makes it call
// runtime.Goexit.
var (
	errPanics = lanestest.ErrPanics
	errGoexit = lanestest.ErrGoexit
)

// qRun is what one Process call under a quarantine did.
type qRun struct {
	resp    kafka.EventResponse
	started []string
	metrics kafka.BatchMetrics
	logs    *logBuffer
}

func (r qRun) outcomes() map[string]kafka.Outcome {
	out := map[string]kafka.Outcome{}
	for _, m := range r.metrics.Records {
		out[fmt.Sprintf("%s/%d", m.TopicPartition, m.Offset)] = m.Outcome
	}
	return out
}

// lines returns the log lines about record "t-0/5", in order.
func (r qRun) lines(t *testing.T, record string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rec := range r.logs.Records(t) {
		if rec["msg"] == "kafka: record" && fmt.Sprintf("%s-%v/%v", rec["topic"], rec["partition"], rec["offset"]) == record {
			out = append(out, rec)
		}
	}
	return out
}

const testThreshold = 3

// runQuarantine processes ev under q (threshold testThreshold) with a
// handler that returns does[record] (errPanics: it panics, errGoexit: it
// calls runtime.Goexit), logging and collecting metrics, and checks the
// fake's contract. Each adjust changes the Config first.
func runQuarantine(t *testing.T, q kafka.Quarantine, ev events.KafkaEvent, does map[string]error, adjust ...func(*kafka.Config)) qRun {
	t.Helper()
	var rec recorder
	r := qRun{logs: &logBuffer{}}
	cfg := kafka.Config{Handler: func(ctx context.Context, kr kafka.Record) error {
		rec.Start(name(kr))
		return lanestest.Act(name(kr), does[name(kr)])
	}, Quarantine: q, QuarantineThreshold: testThreshold, Logger: r.logs.Logger(), Metrics: func(m kafka.BatchMetrics) { r.metrics = m }}
	for _, a := range adjust {
		a(&cfg)
	}
	var err error
	r.resp, err = newProcessor(t, cfg).Process(context.Background(), ev)
	require.NoError(t, err)
	r.started = rec.Started()
	if f, ok := q.(*fakeQuarantine); ok {
		f.RequireSound(t)
	}
	return r
}

// runFaulty is runQuarantine for a quarantine that may end a goroutine
// with runtime.Goexit: in a synctest bubble, with Process on a goroutine
// of its own, so that a Goexit that ends Process is a failure of the test.
func runFaulty(t *testing.T, q *fakeQuarantine, ev events.KafkaEvent, does map[string]error, adjust ...func(*kafka.Config)) (r qRun) {
	t.Helper()
	lanestest.Returns(t, func(t *testing.T) { r = runQuarantine(t, q, ev, does, adjust...) })
	return r
}

// failing returns a script that makes every call to method fail as fault
// says ("error", "panic" or "goexit").
func failing(method, fault string) func(qCall) error { return lanestest.Failing(method, fault) }

// The error that failed a quarantine call, as logged, for each fault.
var faultText = lanestest.FaultText

// withHeader adds header k: v to the records named.
func withHeader(ev events.KafkaEvent, k, v string, recs ...string) events.KafkaEvent {
	for tp, rs := range ev.Records {
		for i := range rs {
			for _, n := range recs {
				if fmt.Sprintf("%s/%d", tp, rs[i].Offset) == n {
					rs[i].Headers = append(rs[i].Headers, map[string]events.JSONNumberBytes{k: []byte(v)})
				}
			}
		}
	}
	return ev
}
