package kafkaout_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
)

// The redrive's producer writes each record to the partition it names,
// whatever its key hashes to, with its key, value and headers, in the order
// produced, idempotently and acknowledged by all in-sync replicas; a
// record to a partition that does not exist is refused.
func TestRedriveProducerWritesEachRecordToItsPartition(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 4, "commands")
	var acks []int16
	var idempotent []bool
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.ProduceRequest)
		acks = append(acks, req.Acks)
		for _, tp := range req.Topics {
			for _, p := range tp.Partitions {
				var b kmsg.RecordBatch
				if err := b.ReadFrom(p.Records); err == nil {
					idempotent = append(idempotent, b.ProducerID >= 0)
				}
			}
		}
		return nil, nil, false
	})
	p, err := kafkaout.NewRedriveProducer(kafkaout.ProducerConfig{Brokers: c.ListenAddrs()})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, v := range []string{"first", "second"} {
		rec := &kgo.Record{Topic: "commands", Partition: 3, Key: []byte("job-1"), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "outbox-id", Value: []byte("job-1/v1")}, {Key: "fifoworker-redrive", Value: []byte("1.n.s")}}}
		require.NoError(t, p.ProduceSync(ctx, rec).FirstErr(), v)
	}
	require.NotEmpty(t, acks)
	for _, a := range acks {
		require.Equal(t, int16(-1), a, "acks from all in-sync replicas")
	}
	for _, ok := range idempotent {
		require.True(t, ok, "an idempotent producer's batches")
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"commands": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart(), 3: kgo.NewOffset().AtStart()},
	}))
	require.NoError(t, err)
	defer cl.Close()
	var got []*kgo.Record
	for len(got) < 2 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		got = append(got, fs.Records()...)
	}
	require.Len(t, got, 2)
	for i, r := range got {
		require.Equal(t, int32(3), r.Partition)
		require.Equal(t, "job-1", string(r.Key))
		require.Equal(t, []string{"first", "second"}[i], string(r.Value))
		require.Equal(t, "fifoworker-redrive", r.Headers[1].Key)
	}
	require.Error(t, p.ProduceSync(ctx, &kgo.Record{Topic: "commands", Partition: 4, Key: []byte("k")}).FirstErr())
}
