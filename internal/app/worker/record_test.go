package worker_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/transport"
	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// commandRecord is the Kafka record of the command a job's creation
// emitted, as the Kafka relay publishes it: keyed by the job id, the
// command as its value.
func commandRecord(t testing.TB, job jobs.Job, partition, offset int64) kafka.Record {
	t.Helper()
	msg := commandMessage(t, job, "unused")
	return kafka.Record{Topic: "fifoworker.commands", Partition: partition, Offset: offset, Key: []byte(job.ID), Value: []byte(msg.Body)}
}

// A record runs its command as a message does: claimed, run, accepted.
// Its attempt id is the request id and the record's ref, and the log names
// the record as message_id and its key as group_id.
func TestHandleRecordRunsTheCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job, _ := b.create(t, "job-42", nil)
	rec := commandRecord(t, job, 3, 1207)

	require.NoError(t, b.worker(lines("a", "b")).HandleRecord(invocation(t, "req-1", time.Minute), rec))

	done := b.get(t, "job-42")
	require.Equal(t, jobs.StatusCompleted, done.Status)
	want := "req-1_" + transport.FromRecord(&rec).Ref
	require.Equal(t, want, done.LeaseOwner)
	require.Equal(t, "candidates/job-42/g0000000001/"+want+".txt", done.Result.Key)
	rec2 := b.logs.one(t, "result accepted")
	require.Equal(t, "fifoworker.commands-3@1207", rec2.Attrs["message_id"])
	require.Equal(t, "job-42", rec2.Attrs["group_id"])
	require.Equal(t, want, rec2.Attrs["attempt_id"])
}

// What a record can never do is refused with Kafka's permanent marker
// (kafka.Permanent, which the Kafka processor reads; not pkg/fifo's), and
// nothing is claimed: a key that is not the command's job, a null key, a
// value that is not a command, a value over outbox.MaxBody.
func TestHandleRecordRefusesForGoodWhatCanNeverRun(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		change func(r *kafka.Record)
		want   error
		says   string
	}{
		"another job's key": {func(r *kafka.Record) { r.Key = []byte("job-7") }, worker.ErrGroupMismatch, `command for job job-42 under key "job-7"`},
		"null key":          {func(r *kafka.Record) { r.Key = nil }, worker.ErrGroupMismatch, "command for job job-42 under a null key"},
		"value not JSON":    {func(r *kafka.Record) { r.Value = []byte("job-42 please") }, outbox.ErrMalformed, "invalid character"},
		"null value":        {func(r *kafka.Record) { r.Value = nil }, outbox.ErrMalformed, "EOF"},
		"value one byte over MaxBody": {func(r *kafka.Record) {
			r.Value = append(r.Value, strings.Repeat(" ", outbox.MaxBody+1-len(r.Value))...)
		}, outbox.ErrMalformed, "body of 65537 bytes is over 65536"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			job, _ := b.create(t, "job-42", nil)
			rec := commandRecord(t, job, 0, 5)
			tc.change(&rec)
			err := b.worker(mustNotRun(t)).HandleRecord(invocation(t, "req-1", time.Minute), rec)
			require.ErrorIs(t, err, tc.want)
			require.True(t, kafka.IsPermanent(err), "got %v", err)
			require.False(t, fifo.IsPermanent(err), "Kafka's marker, not the SQS processor's: %v", err)
			require.Contains(t, err.Error(), "fifoworker.commands-0@5", "the error names the record")
			require.Contains(t, err.Error(), tc.says)
			require.Equal(t, jobs.StatusPending, b.get(t, "job-42").Status, "nothing was claimed")
		})
	}
}

// The bound is outbox.MaxBody exactly: a command padded to it runs.
func TestHandleRecordRunsAValueOfExactlyMaxBody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job, _ := b.create(t, "job-42", nil)
	rec := commandRecord(t, job, 0, 5)
	rec.Value = append(rec.Value, strings.Repeat(" ", outbox.MaxBody-len(rec.Value))...)
	require.Len(t, rec.Value, outbox.MaxBody)
	require.NoError(t, b.worker(lines("x")).HandleRecord(invocation(t, "req-1", time.Minute), rec))
	require.Equal(t, jobs.StatusCompleted, b.get(t, "job-42").Status)
}

// Without a Lambda request id a record, like a message, fails for a
// retry (not for good) and claims nothing.
func TestHandleRecordWithoutLambdaContextClaimsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job, _ := b.create(t, "job-42", nil)
	err := b.worker(mustNotRun(t)).HandleRecord(t.Context(), commandRecord(t, job, 0, 5))
	require.ErrorIs(t, err, worker.ErrNoLambdaContext)
	require.False(t, kafka.IsPermanent(err))
	require.Equal(t, jobs.StatusPending, b.get(t, "job-42").Status)
}

// The worker behind the Kafka processor, end to end on the memory store:
// a batch of two partitions, three jobs (two sharing a partition) and one
// record under the wrong key. The three commands run to completion, each
// an attempt of its own record; the wrong key's record is refused and
// reported, since no dead-letter store takes it (the mapping's retries
// and on-failure destination decide), and it claimed nothing.
func TestTheWorkerRunsCommandsThroughTheKafkaProcessor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j1, _ := b.create(t, "job-1", nil)
	j2, _ := b.create(t, "job-2", nil)
	j3, _ := b.create(t, "job-3", nil)
	j4, _ := b.create(t, "job-4", nil)
	wrong := commandRecord(t, j4, 0, 12)
	wrong.Key = []byte("job-1")
	p, err := kafka.New(kafka.Config{Handler: b.worker(lines("x")).HandleRecord})
	require.NoError(t, err)

	ev := kafkaEvent(commandRecord(t, j1, 0, 10), commandRecord(t, j2, 0, 11), wrong, commandRecord(t, j3, 1, 4))
	resp, err := p.Process(invocation(t, "req-batch", time.Minute), ev)
	require.NoError(t, err)

	require.Equal(t, kafka.EventResponse{BatchItemFailures: []kafka.BatchItemFailure{
		{ItemIdentifier: kafka.ItemIdentifier{TopicPartition: "fifoworker.commands-0", Offset: 12}},
	}}, resp)
	for id, rec := range map[string]kafka.Record{"job-1": commandRecord(t, j1, 0, 10), "job-2": commandRecord(t, j2, 0, 11), "job-3": commandRecord(t, j3, 1, 4)} {
		done := b.get(t, id)
		require.Equal(t, jobs.StatusCompleted, done.Status, id)
		require.Equal(t, "req-batch_"+transport.FromRecord(&rec).Ref, done.LeaseOwner, id)
		require.Equal(t, "x\n", b.read(t, done.Result.Key), id)
	}
	require.Equal(t, jobs.StatusPending, b.get(t, "job-4").Status, "the record under job-1's key claimed nothing")
}

// kafkaEvent is the records as Lambda's KafkaEvent holds them: grouped
// under their topic-partition, key and value in base64.
func kafkaEvent(recs ...kafka.Record) events.KafkaEvent {
	ev := events.KafkaEvent{EventSource: "aws:kafka", Records: map[string][]events.KafkaRecord{}}
	for _, r := range recs {
		tp := r.TopicPartition()
		ev.Records[tp] = append(ev.Records[tp], events.KafkaRecord{
			Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, TimestampType: "CREATE_TIME",
			Key: base64.StdEncoding.EncodeToString(r.Key), Value: base64.StdEncoding.EncodeToString(r.Value),
		})
	}
	return ev
}
