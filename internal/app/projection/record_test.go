package projection_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// record is e as the Kafka relay publishes it: keyed by its job, at offset
// offset of partition 0.
func record(t *testing.T, e *outbox.Event, offset int64) kafka.Record {
	t.Helper()
	body, err := json.Marshal(e)
	require.NoError(t, err)
	return kafka.Record{Topic: "fifoworker.events", Partition: 0, Offset: offset, Key: []byte(e.JobID), Value: body}
}

func (b *testBundle) handleRecord(t *testing.T, i int) error {
	t.Helper()
	return b.p.HandleRecord(b.ctx, record(t, &b.events[i], int64(i)))
}

// A record projects as a message does; the log names the record and its
// key, and no receive count, which a record does not carry.
func TestHandleRecordApplies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.handleRecord(t, 0))
	require.NoError(t, b.handleRecord(t, 1))
	b.requireTotals(t, 10, 0)
	b.requireView(t, 1)
	rec := b.lastLog(t)
	require.Equal(t, "projection: event projected", rec["msg"])
	require.Equal(t, "applied", rec["outcome"])
	require.Equal(t, "fifoworker.events-0@1", rec["message_id"])
	require.Equal(t, "job-42", rec["group_id"])
	require.NotContains(t, rec, "receive_count")
}

// Without a receive count there is no threshold to wait for: the first
// gap recovers from the job item, and the rest of the job's records follow.
// On SQS the same event waits (TestHandleFailsOnAGapBelowTheThreshold).
func TestHandleRecordRecoversAtTheFirstGap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.handleRecord(t, 0))
	require.NoError(t, b.handleRecord(t, 1))
	b.jobs.items["job-42"] = jobAt(&b.events[4])
	require.NoError(t, b.handleRecord(t, 3), "version 3 is not in the log")
	require.Equal(t, 1, b.jobs.reads)
	rec := b.lastLog(t)
	require.Equal(t, "projection: recovered from the job item", rec["msg"])
	require.Equal(t, "gap", rec["reason"])
	b.requireTotals(t, 25, 0)
	require.NoError(t, b.handleRecord(t, 4))
	require.Equal(t, "duplicate", b.lastLog(t)["outcome"])
	require.NoError(t, b.handleRecord(t, 5))
	b.requireTotals(t, 40, 1)
}

// What a record can never do is refused with Kafka's permanent marker, and
// nothing is projected: a key that is not the event's job (a null key
// included), a value that is not an event, a value over outbox.MaxBody.
func TestHandleRecordRefusesForGoodWhatCanNeverBeProjected(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		change func(r *kafka.Record)
		want   error
		says   string
	}{
		"another job's key": {func(r *kafka.Record) { r.Key = []byte("job-7") }, projection.ErrKeyMismatch, `event of job job-42 under key "job-7"`},
		"null key":          {func(r *kafka.Record) { r.Key = nil }, projection.ErrKeyMismatch, "event of job job-42 under a null key"},
		"value not JSON":    {func(r *kafka.Record) { r.Value = []byte("job-42 started") }, outbox.ErrMalformed, "invalid character"},
		"value one byte over MaxBody": {func(r *kafka.Record) {
			r.Value = append(r.Value, strings.Repeat(" ", outbox.MaxBody+1-len(r.Value))...)
		}, outbox.ErrMalformed, "body of 65537 bytes is over 65536"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			rec := record(t, &b.events[0], 7)
			tc.change(&rec)
			err := b.p.HandleRecord(b.ctx, rec)
			require.ErrorIs(t, err, tc.want)
			require.True(t, kafka.IsPermanent(err), "got %v", err)
			require.False(t, fifo.IsPermanent(err), "Kafka's marker, not the SQS processor's: %v", err)
			require.Contains(t, err.Error(), "fifoworker.events-0@7")
			require.Contains(t, err.Error(), tc.says)
			_, err = b.p.View(b.ctx, "job-42")
			require.ErrorIs(t, err, projection.ErrNotFound, "nothing projected")
			b.requireTotals(t, 0, 0)
		})
	}
}

// The bound is outbox.MaxBody exactly: an event padded to it projects.
func TestHandleRecordProjectsAValueOfExactlyMaxBody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := record(t, &b.events[0], 0)
	rec.Value = append(rec.Value, strings.Repeat(" ", outbox.MaxBody-len(rec.Value))...)
	require.Len(t, rec.Value, outbox.MaxBody)
	require.NoError(t, b.p.HandleRecord(b.ctx, rec))
	b.requireView(t, 0)
}

// A recovery that finds the job of another tenant is refused for good
// with Kafka's marker too.
func TestHandleRecordRefusesToRecoverFromAnotherTenantsJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := jobAt(&b.events[5])
	other.Tenant = "t-2"
	b.jobs.items["job-42"] = other
	err := b.handleRecord(t, 2)
	require.True(t, kafka.IsPermanent(err), "%v", err)
	require.False(t, fifo.IsPermanent(err), "%v", err)
	b.requireTotals(t, 0, 0)
}

// The projector behind the Kafka processor: job-42's lifecycle with
// version 3 missing from the log, and another job's events in the same
// partition. The gap recovers from the job item at once, so nothing waits
// and nothing is reported; each job's totals are its item's.
func TestTheProjectorRunsThroughTheKafkaProcessor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.jobs.items["job-42"] = jobAt(&b.events[5])
	p, err := kafka.New(kafka.Config{Handler: b.p.HandleRecord})
	require.NoError(t, err)
	ev := events.KafkaEvent{Records: map[string][]events.KafkaRecord{}}
	offset := int64(0)
	add := func(e *outbox.Event) {
		r := record(t, e, offset)
		offset++
		ev.Records["fifoworker.events-0"] = append(ev.Records["fifoworker.events-0"], events.KafkaRecord{
			Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Key: base64.StdEncoding.EncodeToString(r.Key), Value: base64.StdEncoding.EncodeToString(r.Value),
		})
	}
	other := projectiontest.Lifecycle("job-43", "t-1")
	for i := range b.events {
		if i != 2 {
			add(&b.events[i])
		}
		add(&other[i])
	}
	resp, err := p.Process(b.ctx, ev)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	b.requireTotals(t, 80, 2)
	b.requireView(t, 5)
	require.Equal(t, 1, b.jobs.reads, "one recovery, job-42's")
}
