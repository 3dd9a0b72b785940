package localesm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaConsumer is what a KafkaMapping needs of a Kafka consumer group
// member. kgoConsumer is franz-go's; the unit tests run on a fake, and
// kafkacontract_test.go holds both to the same contract.
type kafkaConsumer interface {
	// Poll waits until records of assigned, unpaused partitions are
	// fetched, in offset order within each partition, or until ctx ends.
	// It returns what it has with the first error.
	Poll(ctx context.Context) ([]*kgo.Record, error)
	// AllowRebalance lets assignment changes proceed again. Between a
	// Poll that returned records and this call, no assigned or revoked
	// callback runs, so records are never taken in for a partition that
	// has just been revoked.
	AllowRebalance()
	// Pause stops fetching the partitions; Resume fetches them again from
	// the next record not yet returned by Poll. Records fetched but not
	// returned while a partition is paused are fetched again, never lost.
	Pause(tps ...kafkaTP)
	Resume(tps ...kafkaTP)
	// Commit stores each partition's offset (the next record to read) for
	// the group, synchronously. The consumer does not check ownership:
	// the broker takes a commit from any member of the current generation.
	Commit(ctx context.Context, offsets map[kafkaTP]int64) error
	// Close leaves the group; the revoked callback runs for what the member
	// held.
	Close()
}

// kafkaConsumerConfig is what the mapping tells a consumer.
type kafkaConsumerConfig struct {
	bootstrap []string
	topic     string
	group     string
	// start applies to partitions the group has no committed offset for:
	// Lambda ignores StartingPosition when the group has one.
	start   StartingPosition
	startAt time.Time // AtTimestamp only
	// assigned and revoked are called by the consumer as the group
	// reassigns partitions (lost partitions are revoked), one at a time.
	assigned, revoked func(tps []kafkaTP)
}

// kgoConsumer is a franz-go group member: manual commits only, rebalances
// blocked from a poll's return until AllowRebalance, and read_committed
// fetches (aborted transactions never reach the function).
type kgoConsumer struct {
	cl *kgo.Client
}

var _ kafkaConsumer = (*kgoConsumer)(nil)

func newKgoConsumer(c kafkaConsumerConfig) (kafkaConsumer, error) {
	reset := kgo.NewOffset().AtStart()
	switch c.start {
	case Latest:
		reset = kgo.NewOffset().AtEnd()
	case AtTimestamp:
		reset = kgo.NewOffset().AfterMilli(c.startAt.UnixMilli())
	}
	callback := func(fn func([]kafkaTP)) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			if tps := tpsOf(m); len(tps) > 0 {
				fn(tps)
			}
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.bootstrap...),
		kgo.ConsumerGroup(c.group),
		kgo.ConsumeTopics(c.topic),
		kgo.ConsumeResetOffset(reset),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.OnPartitionsAssigned(callback(c.assigned)),
		kgo.OnPartitionsRevoked(callback(c.revoked)),
		kgo.OnPartitionsLost(callback(c.revoked)),
		// A paused partition is fetched again only after each broker's
		// fetch in flight returns: a short wait keeps a resumed partition
		// from idling.
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	return &kgoConsumer{cl: cl}, nil
}

func tpsOf(m map[string][]int32) []kafkaTP {
	var tps []kafkaTP
	for topic, ps := range m {
		for _, p := range ps {
			tps = append(tps, kafkaTP{topic, p})
		}
	}
	return tps
}

func partitionsOf(tps []kafkaTP) map[string][]int32 {
	m := map[string][]int32{}
	for _, tp := range tps {
		m[tp.topic] = append(m[tp.topic], tp.partition)
	}
	return m
}

func (k *kgoConsumer) Poll(ctx context.Context) ([]*kgo.Record, error) {
	fs := k.cl.PollFetches(ctx)
	var err error
	for _, fe := range fs.Errors() {
		switch {
		case errors.Is(fe.Err, context.Canceled), errors.Is(fe.Err, context.DeadlineExceeded):
			err = ctx.Err()
		case err == nil:
			err = fmt.Errorf("localesm: fetch %s: %w", kafkaTP{fe.Topic, fe.Partition}, fe.Err)
		}
	}
	return fs.Records(), err
}

func (k *kgoConsumer) AllowRebalance() { k.cl.AllowRebalance() }

func (k *kgoConsumer) Pause(tps ...kafkaTP) { k.cl.PauseFetchPartitions(partitionsOf(tps)) }

func (k *kgoConsumer) Resume(tps ...kafkaTP) { k.cl.ResumeFetchPartitions(partitionsOf(tps)) }

func (k *kgoConsumer) Commit(ctx context.Context, offsets map[kafkaTP]int64) error {
	m := map[string]map[int32]kgo.EpochOffset{}
	for tp, off := range offsets {
		if m[tp.topic] == nil {
			m[tp.topic] = map[int32]kgo.EpochOffset{}
		}
		m[tp.topic][tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	var err error
	k.cl.CommitOffsetsSync(ctx, m, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, cerr error) {
		if cerr != nil {
			err = cerr
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil && err == nil {
					err = fmt.Errorf("%s: %w", kafkaTP{t.Topic, p.Partition}, perr)
				}
			}
		}
	})
	if err != nil {
		return fmt.Errorf("localesm: commit: %w", err)
	}
	return nil
}

func (k *kgoConsumer) Close() { k.cl.Close() }
