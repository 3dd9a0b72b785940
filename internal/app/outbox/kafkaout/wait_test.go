package kafkaout_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/internal/app/outbox/outboxtest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The producer acknowledges records late and out of order, as brokers do
// across partitions; the relay never produces a job's next record before
// the producer acknowledged the one before (on either topic: a job's
// commands and events are one order), and every record goes out once.
func TestAJobsNextRecordIsProducedOnlyAfterItsPreviousWasAcknowledged(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var recs []events.DynamoDBEventRecord
		var histories [][]events.DynamoDBEventRecord
		for i := range 8 {
			histories = append(histories, outboxtest.History(fmt.Sprintf("job-%d", i), jobs.EventStarted, jobs.EventProgress, jobs.EventProgress, jobs.EventCompleted))
		}
		for v := range 5 {
			for _, h := range histories {
				recs = append(recs, h[v])
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		var mu sync.Mutex
		inFlight := map[string]string{} // job -> outbox id not yet acknowledged
		var violations []string
		f := &fakeProducer{answer: func(r *kgo.Record, promise func(*kgo.Record, error)) {
			mu.Lock()
			defer mu.Unlock()
			job, id := string(r.Key), header(r, kafkaout.HeaderOutboxID)
			if prev, ok := inFlight[job]; ok {
				violations = append(violations, id+" produced while "+prev+" was not acknowledged")
			}
			inFlight[job] = id
			delay := time.Duration(rng.IntN(50)) * time.Millisecond
			go func() {
				time.Sleep(delay)
				mu.Lock()
				delete(inFlight, job)
				mu.Unlock()
				promise(r, nil)
			}()
		}}
		resp, err := newRelay(t, f, nil).Handle(t.Context(), events.DynamoDBEvent{Records: recs})
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
		require.Empty(t, violations)
		require.Len(t, f.produced, 8*5)
		for i := range histories {
			id := fmt.Sprintf("job-%d", i)
			var got []string
			for _, r := range f.produced {
				if string(r.Key) == id {
					got = append(got, header(r, kafkaout.HeaderOutboxID))
				}
			}
			require.Equal(t, []string{id + "/v0", id + "/v1", id + "/v2", id + "/v3", id + "/v4"}, got)
		}
	})
}

// A round the brokers do not acknowledge in time (down, unreachable) ends
// ResponseReserve before the invocation's deadline, so the response still
// reaches Lambda: the records not acknowledged by then are not published,
// the response names the first, and the log says why. An acknowledgement
// just before that instant counts; one just after does not.
func TestTheRelayStopsWaitingResponseReserveBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	const timeout = 10 * time.Second
	for _, tc := range []struct {
		name    string
		reserve time.Duration // 0: the default
		ackAt   time.Duration // after the start; 0: never
		acked   bool
	}{
		{name: "never acknowledged, the default reserve"},
		{name: "never acknowledged, a reserve of 1s", reserve: time.Second},
		{name: "acknowledged 1ns before the reserve", ackAt: timeout - kafkaout.DefaultResponseReserve - time.Nanosecond, acked: true},
		{name: "acknowledged 1ns after the reserve began", ackAt: timeout - kafkaout.DefaultResponseReserve + time.Nanosecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				reserve := tc.reserve
				if reserve == 0 {
					reserve = kafkaout.DefaultResponseReserve
				}
				a := outboxtest.History("job-42", jobs.EventStarted)
				var produceCtx context.Context
				f := &fakeProducer{}
				f.answer = func(r *kgo.Record, promise func(*kgo.Record, error)) {
					if tc.ackAt == 0 {
						return // the brokers never answer
					}
					go func() {
						time.Sleep(tc.ackAt)
						promise(r, nil)
					}()
				}
				recorder := &ctxRecorder{Producer: f, ctx: &produceCtx}
				var logs bytes.Buffer
				relay, err := kafkaout.NewRelay(kafkaout.Config{Producer: recorder, CommandsTopic: commandsTopic, EventsTopic: eventsTopic,
					PartitionCount: partitions, ResponseReserve: tc.reserve, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(t.Context(), timeout)
				defer cancel()
				start := time.Now()
				resp, err := relay.Handle(ctx, events.DynamoDBEvent{Records: a})
				require.NoError(t, err)
				if tc.acked {
					// v0 made it; v1 is produced after it and never answered.
					require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[1].Change.SequenceNumber}}, resp.BatchItemFailures)
				} else {
					require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[0].Change.SequenceNumber}}, resp.BatchItemFailures)
					require.Len(t, f.produced, 1, "v1 is never produced")
				}
				require.Equal(t, timeout-reserve, time.Since(start), "the relay answers exactly ResponseReserve before the deadline")
				require.Error(t, produceCtx.Err(), "the records' context ends with Handle: the client fails what it has not sent")
				require.Contains(t, logs.String(), "not acknowledged")
				// A late answer, after Handle returned, never blocks the
				// client's promise (the bubble would deadlock).
				time.Sleep(timeout)
			})
		})
	}
}

// ctxRecorder keeps the context of the last Produce.
type ctxRecorder struct {
	kafkaout.Producer
	ctx *context.Context
}

func (c *ctxRecorder) Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	*c.ctx = ctx
	c.Producer.Produce(ctx, r, promise)
}
