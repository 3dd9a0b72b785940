package kafkaout_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/internal/app/outbox/outboxtest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// A record whose outcome the relay could not learn is written again by
// the stream's retry; when that retry runs in another execution
// environment (another producer, whose idempotence is its own), the first
// write can land after the job's next version: the idempotent producer
// orders one producer's batches, not two producers'. So a consumer can
// read a late copy of v after v+1, told by its outbox id and absorbed by
// the fence; the relay's per-round wait does not prevent it.
func TestALateCopyFromAnotherProducerCanLandAfterTheNextVersion(t *testing.T) {
	t.Parallel()
	b := setupBroker(t)
	first := b.producer
	second, err := kafkaout.NewProducer(kafkaout.ProducerConfig{Brokers: b.addrs, ClientID: "another-environment"})
	require.NoError(t, err)
	t.Cleanup(second.Close)
	a := outboxtest.History("job-42", jobs.EventStarted, jobs.EventCompleted)
	release := make(chan struct{})
	var requests atomic.Int64
	b.cluster.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		if requests.Add(1) == 1 { // the first environment's job-42/v1, held in the network
			b.cluster.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	resp, err := b.relay(t, kafkaout.Config{ResponseReserve: 100 * time.Millisecond}).Handle(ctx, events.DynamoDBEvent{Records: a[1:]})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[1].Change.SequenceNumber}}, resp.BatchItemFailures)

	b.producer = second // the retry, in another execution environment
	resp, err = b.relay(t, kafkaout.Config{}).Handle(t.Context(), events.DynamoDBEvent{Records: a[1:]})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	close(release)
	require.NoError(t, first.Flush(t.Context()), "the first environment's write lands")
	require.Equal(t, map[string][]string{"job-42": {"job-42/v1", "job-42/v2", "job-42/v1"}}, lanes(t, b.consume(t, eventsTopic)))
}
