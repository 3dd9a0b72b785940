package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

const commandsTopic = "fw-commands"

// kafkaOps is the test's operator environment on a Kafka deployment: the
// topics named, the brokers too, the transport not (each test says it).
func kafkaOps(t *testing.T) *testOps {
	t.Helper()
	o := newTestOps(t)
	o.vars["FIFOWORKER_COMMANDS_TOPIC"] = commandsTopic
	o.vars["FIFOWORKER_EVENTS_TOPIC"] = "fw-events"
	o.vars["KAFKA_BOOTSTRAP_SERVERS"] = "127.0.0.1:9092, 127.0.0.1:9093"
	return o
}

// parkKafka parks key's records of partition at offsets, held, as the
// Kafka worker's quarantine does.
func parkKafka(t *testing.T, store *quarantine.MemoryStore, key string, partition int64, offsets ...int64) {
	t.Helper()
	q, err := quarantine.NewKafka(quarantine.KafkaConfig{Store: store, Topic: commandsTopic, Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	var recs []*kafka.Record
	for _, o := range offsets {
		recs = append(recs, &kafka.Record{Topic: commandsTopic, Partition: partition, Offset: o, Key: []byte(key), Value: []byte(`{"job_id":"` + key + `"}`),
			Headers: []kafka.Header{{Key: "outbox-id", Value: []byte(key + "/v1")}}})
	}
	_, err = q.Park(t.Context(), kafka.TopicKey{Topic: commandsTopic, Key: key}, recs, errors.New("handler: permanent: bad spec"), true)
	require.NoError(t, err)
}

// On Kafka (--transport kafka, or FIFOWORKER_TRANSPORT=kafka), the verbs
// work on the topic's held keys: list names each key's partition, show its
// records by offset and its attempts, discard --seq takes an offset of the
// key's partition, and a redrive produces each copy to that partition.
func TestQuarantineVerbsOnKafka(t *testing.T) {
	t.Parallel()
	o := kafkaOps(t)
	parkKafka(t, o.open.quarantine, "job-1", 3, 40, 41, 45)
	_, err := o.open.quarantine.Failed(t.Context(), commandsTopic, "job-1", quarantine.Failure{Sequence: mustSeq(t, 3, 39), Cause: "busy"}, t0)
	require.NoError(t, err)

	code, out, errOut := o.run("quarantine", "list", "--transport", "kafka")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^KEY\s+PARTITION\s+STATE\s+EPOCH\s+PARKED\s+HELD SINCE\s+CAUSE$`, out)
	require.Regexp(t, `(?m)^job-1\s+3\s+held\s+0\s+3\s+2026-12-01T10:00:00Z\s+handler: permanent: bad spec$`, out)
	require.Equal(t, quarantineTarget{Queue: commandsTopic, QueueHint: "FIFOWORKER_COMMANDS_TOPIC",
		Table: "fw-quarantine", TableHint: "FIFOWORKER_QUARANTINE_TABLE_NAME",
		Bucket: "fw-candidates", BucketHint: "FIFOWORKER_CANDIDATES_BUCKET_NAME",
		Kafka: true, Brokers: []string{"127.0.0.1:9092", "127.0.0.1:9093"}}, *o.open.qAsked)

	o.vars["FIFOWORKER_TRANSPORT"] = "kafka"
	code, out, _ = o.run("quarantine", "show", "job-1", "--json")
	require.Equal(t, 0, code)
	var shown struct {
		Hold    kafkaHoldJSON     `json:"hold"`
		Records []kafkaParkedJSON `json:"records"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &shown), out)
	require.Equal(t, int64(3), *shown.Hold.Partition)
	require.Equal(t, [3]int64{40, 45, 40}, [3]int64{*shown.Hold.From, *shown.Hold.Through, *shown.Hold.Next})
	require.Equal(t, &attemptsJSON{Partition: 3, Offset: 39, Failed: 1, Cause: "busy"}, shown.Hold.Attempts)
	require.Len(t, shown.Records, 3)
	require.Equal(t, int64(41), shown.Records[1].Offset)
	require.Equal(t, "job-1", string(shown.Records[1].Key))
	require.Equal(t, "job-1/v1", string(shown.Records[1].Headers[0].Value))

	code, out, _ = o.run("quarantine", "show", "job-1")
	require.Equal(t, 0, code)
	require.Contains(t, out, "key job-1 on fw-commands: held, epoch 0, 3 parked, partition 3\n")
	require.Contains(t, out, "attempts: 1 failed of offset 39 (partition 3): busy\n")
	require.Regexp(t, `(?m)^41\s+parked\s+18\s+"\{\\"job_id\\":\\"job-1\\"\}"$`, out)

	code, _, errOut = o.run("quarantine", "discard", "job-1", "--seq", "41", "--yes")
	require.Equal(t, 0, code, errOut)
	ms, err := o.open.quarantine.Messages(t.Context(), commandsTopic, "job-1", quarantine.StatusDiscarded, "", 0)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.Equal(t, mustSeq(t, 3, 41), ms[0].Sequence, "offset 41 of the key's partition")
	code, _, errOut = o.run("quarantine", "discard", "job-1", "--seq", "-1", "--yes")
	require.Equal(t, 2, code, errOut)

	code, out, errOut = o.run("quarantine", "redrive", "job-1", "--no-wait")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "group job-1: 2 sent under epoch 1; now draining, 2 parked")
	require.Len(t, o.open.records.Sent, 2)
	for i, c := range o.open.records.Sent {
		require.Equal(t, commandsTopic, c.Topic)
		require.Equal(t, int64(3), c.Partition)
		id, ok := quarantine.ParseKafkaCopy(&kafka.Record{Headers: []kafka.Header{{Key: c.Headers[len(c.Headers)-1].Key, Value: c.Headers[len(c.Headers)-1].Value}}})
		require.True(t, ok)
		require.Equal(t, mustSeq(t, 3, []int64{40, 45}[i]), id.Sequence)
	}
}

func mustSeq(t *testing.T, partition, offset int64) string {
	t.Helper()
	s, err := quarantine.KafkaSeq(partition, offset)
	require.NoError(t, err)
	return s
}

// What a Kafka verb refuses: a transport that is neither (flag or
// environment), a redrive without brokers, a topic not named; an SQS
// deployment is what it was.
func TestQuarantineOnKafkaRefusals(t *testing.T) {
	t.Parallel()
	o := kafkaOps(t)
	code, _, errOut := o.run("quarantine", "list", "--transport", "kafak")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `--transport "kafak": sqs or kafka`)
	o.vars["FIFOWORKER_TRANSPORT"] = "kafak"
	code, _, errOut = o.run("quarantine", "list")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `FIFOWORKER_TRANSPORT "kafak": sqs or kafka`)
	o.vars["FIFOWORKER_TRANSPORT"] = "kafka"

	parkKafka(t, o.open.quarantine, "job-1", 0, 1)
	delete(o.vars, "KAFKA_BOOTSTRAP_SERVERS")
	code, _, errOut = o.run("quarantine", "redrive", "job-1")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "pass --brokers or set KAFKA_BOOTSTRAP_SERVERS")
	h, err := o.open.quarantine.Hold(t.Context(), commandsTopic, "job-1")
	require.NoError(t, err)
	require.Zero(t, h.Epoch, "nothing begun")

	delete(o.vars, "FIFOWORKER_COMMANDS_TOPIC")
	code, _, errOut = o.run("quarantine", "list")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no commands topic: pass --topic or set FIFOWORKER_COMMANDS_TOPIC")

	code, out, errOut := o.run("quarantine", "list", "--transport", "sqs")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "no group of fw-commands.fifo is held")
}

// The redrive's RecordSender on a broker (kfake, on 127.0.0.1): each copy
// is produced to the partition it names, whatever its key hashes to.
func TestKafkaRecordsProduceToTheCopysPartition(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, commandsTopic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	r, err := newKafkaRecords(c.ListenAddrs(), "", kafkaout.ProducerConfig{})
	require.NoError(t, err)
	t.Cleanup(r.cl.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, r.SendRecord(ctx, quarantine.KafkaCopy{Topic: commandsTopic, Partition: 2, Key: []byte("job-1"), Value: []byte("v"),
		Headers: []quarantine.KafkaHeader{{Key: quarantine.CopyHeader, Value: []byte("1.n.s")}}}))
	require.ErrorContains(t, r.SendRecord(ctx, quarantine.KafkaCopy{Topic: commandsTopic, Partition: 1 << 31}), "not a Kafka partition")

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(commandsTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var got []*kgo.Record
	for len(got) == 0 {
		got = append(got, cl.PollFetches(ctx).Records()...)
		require.NoError(t, ctx.Err())
	}
	require.Equal(t, int32(2), got[0].Partition)
	require.Equal(t, quarantine.CopyHeader, got[0].Headers[0].Key)
}
