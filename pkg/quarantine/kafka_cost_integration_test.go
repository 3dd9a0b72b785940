//go:build integration

package quarantine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// What the Kafka quarantine costs in DynamoDB requests, counted on the
// wire of a DynamoStore on DynamoDB Local, so that the count holds the
// real store's conditions (not a model of them) to pkg/kafka's and
// docs/KAFKA.md's figures: a batch that fails nothing costs its one read;
// a failed attempt one conditional UpdateItem and no read of its own, for
// a key not held (its first failure, its second, and the first of a
// record after another record's count) and for a draining
// key's redriven copy; the (T-1)th failure that write and a park (a
// BatchGetItem and a TransactWriteItems); a write whose condition another writer broke since
// the read is refused and made again from the item the refusal returns,
// one UpdateItem more and still no read. The processor's store has a
// client of its own; the test's writes go through another, not counted.
func TestKafkaAFailureCostsOneWriteAndNoRead(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: b.client, Table: b.table})
	require.NoError(t, err)
	counter := &awstest.Requests{}
	procDB := awstest.DynamoDB(t, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, counter.Count(""))
		o.DisableValidateResponseChecksum = true // DynamoDB Local sends no X-Amz-Crc32 with error responses
	})
	procStore, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: procDB, Table: b.table})
	require.NoError(t, err)
	q, err := quarantine.NewKafka(quarantine.KafkaConfig{Store: procStore, Topic: unitTopic})
	require.NoError(t, err)

	var mu sync.Mutex
	var sideErr error // the other writer's, checked on the test's goroutine
	does := map[string]func(ctx context.Context) error{
		"fine":   func(context.Context) error { return nil },
		"flaky":  func(context.Context) error { return errors.New("busy") },
		"poison": func(context.Context) error { return kafka.Permanent(errors.New("malformed")) },
		// raced: another writer counts a failure of the same record after
		// the batch's read and before the processor's write, as a
		// duplicate delivery running beside it would.
		"raced": func(ctx context.Context) error {
			seq, err := quarantine.KafkaSeq(0, 7)
			if err == nil {
				_, err = store.Failed(ctx, unitTopic, quarantine.KafkaGroup("job-4"),
					quarantine.Failure{Sequence: seq, Cause: "the other delivery"}, time.Now())
			}
			sideErr = err // under mu: the handler runs with it held
			return errors.New("busy")
		},
	}
	p, err := kafka.New(kafka.Config{Handler: func(ctx context.Context, rec kafka.Record) error {
		mu.Lock()
		defer mu.Unlock()
		return does[string(rec.Value)](ctx)
	}, Quarantine: q, QuarantineThreshold: 4})
	require.NoError(t, err)
	measure := func(what string, want map[string]int, recs ...events.KafkaRecord) {
		t.Helper()
		counter.Take()
		_, err := p.Process(t.Context(), kevent(recs...))
		require.NoError(t, err)
		require.Equal(t, want, counter.Take(), what)
	}
	flaky, other := krec(0, 1, "job-1", "flaky"), krec(0, 2, "job-2", "fine")

	measure("a batch that fails nothing", map[string]int{"BatchGetItem": 1}, other)
	measure("a first failure", map[string]int{"BatchGetItem": 1, "UpdateItem": 1}, flaky, other)
	measure("a second failure of the same record", map[string]int{"BatchGetItem": 1, "UpdateItem": 1}, flaky, other)
	requireFailed(t, store, "job-1", mustKafkaSeq(t, 0, 1), 2, quarantine.StateReleased)
	// QuarantineThreshold 4: the third failure is written, and the record
	// parked in the same invocation, its park a read of what its lane
	// has parked already and one transaction.
	measure("the (T-1)th failure, parked", map[string]int{"BatchGetItem": 2, "UpdateItem": 1, "TransactWriteItems": 1}, flaky, other)
	requireFailed(t, store, "job-1", mustKafkaSeq(t, 0, 1), 3, quarantine.StateHeld)

	measure("a failure after another writer's count", map[string]int{"BatchGetItem": 1, "UpdateItem": 2}, krec(0, 7, "job-4", "raced"))
	require.NoError(t, sideErr)
	requireFailed(t, store, "job-4", mustKafkaSeq(t, 0, 7), 2, quarantine.StateReleased)
	measure("a failure of a key whose count is another record's", map[string]int{"BatchGetItem": 1, "UpdateItem": 1}, krec(0, 8, "job-4", "flaky"))
	requireFailed(t, store, "job-4", mustKafkaSeq(t, 0, 8), 1, quarantine.StateReleased)

	measure("a poisoned record parked", map[string]int{"BatchGetItem": 2, "TransactWriteItems": 1}, krec(0, 5, "job-3", "poison"))
	h, err := store.BeginRedrive(t.Context(), unitTopic, quarantine.KafkaGroup("job-3"), time.Now())
	require.NoError(t, err)
	parked, err := store.Messages(t.Context(), unitTopic, quarantine.KafkaGroup("job-3"), quarantine.StatusParked, "", 0)
	require.NoError(t, err)
	require.Len(t, parked, 1)
	c := quarantine.Copy{Epoch: h.Epoch, Nonce: parked[0].Nonce, Sequence: parked[0].Sequence}
	mu.Lock()
	does["poison"] = does["flaky"] // the copy fails, transiently
	mu.Unlock()
	measure("a draining key's copy that fails", map[string]int{"BatchGetItem": 1, "UpdateItem": 1},
		krec(0, 9, "job-3", "poison", quarantine.CopyHeader, c.Header()))
	requireFailed(t, store, "job-3", mustKafkaSeq(t, 0, 9), 1, quarantine.StateDraining)
}

func mustKafkaSeq(t *testing.T, partition, offset int64) string {
	t.Helper()
	seq, err := quarantine.KafkaSeq(partition, offset)
	require.NoError(t, err)
	return seq
}

// requireFailed checks key's hold: in state, counting failed failures of
// the record at seq.
func requireFailed(t *testing.T, store *quarantine.DynamoStore, key, seq string, failed int64, state quarantine.State) {
	t.Helper()
	h, err := store.Hold(t.Context(), unitTopic, quarantine.KafkaGroup(key))
	require.NoError(t, err)
	require.Equal(t, state, h.State, key)
	require.Equal(t, seq, h.Attempts.Sequence, key)
	require.Equal(t, failed, h.Attempts.Failed, key)
}
