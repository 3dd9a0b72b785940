package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/outboxtest"
	"github.com/fifoworker/fifoworker/internal/app/outbox/sqsout"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

const (
	commandsURL = "http://127.0.0.1/000000000000/fifoworker-commands.fifo"
	eventsURL   = "http://127.0.0.1/000000000000/fifoworker-events.fifo"
)

// The stream batches of the tests: one job's history as a shard delivers it.
var (
	history  = outboxtest.History
	record   = outboxtest.Record
	jobImage = outboxtest.JobImage
)

// fakeSQS records sends and fails the entries fail says to.
type fakeSQS struct {
	mu    sync.Mutex
	calls []*sqs.SendMessageBatchInput
	fail  func(url string, e types.SendMessageBatchRequestEntry) error // nil: accept
	sent  map[string][]string                                          // queue -> dedup ids, in send order
}

func (f *fakeSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, in)
	if f.sent == nil {
		f.sent = map[string][]string{}
	}
	out := &sqs.SendMessageBatchOutput{}
	url := aws.ToString(in.QueueUrl)
	for _, e := range in.Entries {
		if f.fail != nil {
			if err := f.fail(url, e); err != nil {
				if err.Error() == "whole call" {
					return nil, err
				}
				out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String(err.Error())})
				continue
			}
		}
		f.sent[url] = append(f.sent[url], aws.ToString(e.MessageDeduplicationId))
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func newRelay(t *testing.T, f *fakeSQS) *outbox.Relay {
	t.Helper()
	relay, err := sqsout.NewRelay(sqsout.Config{Client: f, CommandsURL: commandsURL, EventsURL: eventsURL})
	require.NoError(t, err)
	return relay
}

func TestRelayPublishesEachJobInVersionOrderOneEntryPerGroupPerCall(t *testing.T) {
	t.Parallel()
	a := history("job-42", jobs.EventStarted, jobs.EventProgress, jobs.EventCompleted)
	b := history("job-43", jobs.EventStarted)
	// Interleaved as a shard would deliver them.
	recs := []events.DynamoDBEventRecord{a[0], b[0], a[1], a[2], b[1], a[3]}
	f := &fakeSQS{}
	resp, err := newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: recs})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, []string{"job-42/v0", "job-43/v0"}, f.sent[commandsURL])
	require.Equal(t, []string{"job-42/v1", "job-43/v1", "job-42/v2", "job-42/v3"}, f.sent[eventsURL])
	for _, call := range f.calls {
		groups := map[string]bool{}
		for _, e := range call.Entries {
			g := aws.ToString(e.MessageGroupId)
			require.False(t, groups[g], "two entries of group %s in one SendMessageBatch", g)
			groups[g] = true
			require.Equal(t, g, aws.ToString(e.MessageGroupId))
		}
	}
}

func TestRelayStopsAJobAtItsFailedMessageAndReportsTheFirstUnsentRecord(t *testing.T) {
	t.Parallel()
	a := history("job-42", jobs.EventStarted, jobs.EventProgress, jobs.EventCompleted)
	b := history("job-43", jobs.EventStarted, jobs.EventProgress)
	recs := []events.DynamoDBEventRecord{a[0], b[0], a[1], b[1], a[2], b[2], a[3]}
	f := &fakeSQS{fail: func(_ string, e types.SendMessageBatchRequestEntry) error {
		if aws.ToString(e.MessageDeduplicationId) == "job-42/v2" {
			return errors.New("throttled")
		}
		return nil
	}}
	resp, err := newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: recs})
	require.NoError(t, err)
	// job-42/v3 is never sent before v2; job-43 is unaffected.
	require.Equal(t, []string{"job-42/v1", "job-43/v1", "job-43/v2"}, f.sent[eventsURL])
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[2].Change.SequenceNumber}}, resp.BatchItemFailures,
		"Lambda retries from job-42/v2's record")
}

func TestRelayReportsTheEarliestUnsentRecordAcrossJobs(t *testing.T) {
	t.Parallel()
	a := history("job-42", jobs.EventStarted)
	b := history("job-43", jobs.EventStarted)
	recs := []events.DynamoDBEventRecord{a[0], b[0], a[1], b[1]}
	f := &fakeSQS{fail: func(url string, e types.SendMessageBatchRequestEntry) error {
		if url == eventsURL {
			return errors.New("whole call")
		}
		return nil
	}}
	resp, err := newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: recs})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[1].Change.SequenceNumber}}, resp.BatchItemFailures)
}

func TestRelaySkipsMarkersDeletionsAndRepeatsAndFailsOnAnUndecodableRecord(t *testing.T) {
	t.Parallel()
	a := history("job-42", jobs.EventStarted)
	marker := events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: "1",
		Keys:     map[string]events.DynamoDBAttributeValue{"job_id": events.NewStringAttribute("intent#t-1#export-intent-7")},
		NewImage: map[string]events.DynamoDBAttributeValue{"job_id": events.NewStringAttribute("intent#t-1#export-intent-7")}}}
	ttl := events.DynamoDBEventRecord{EventName: "REMOVE", Change: events.DynamoDBStreamRecord{SequenceNumber: "2",
		Keys: a[1].Change.Keys, OldImage: a[1].Change.NewImage}}
	f := &fakeSQS{}
	resp, err := newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{marker, a[0], a[1], a[1], ttl}})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, []string{"job-42/v0"}, f.sent[commandsURL])
	require.Equal(t, []string{"job-42/v1"}, f.sent[eventsURL], "a record delivered twice in a batch is sent once")

	bad := a[1]
	bad.Change.NewImage = map[string]events.DynamoDBAttributeValue{"job_id": events.NewStringAttribute("job-42"), "version": events.NewStringAttribute("three")}
	f = &fakeSQS{}
	b := history("job-43", jobs.EventStarted)
	resp, err = newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{a[0], bad, b[0], b[1]}})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: bad.Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Equal(t, []string{"job-43/v1"}, f.sent[eventsURL], "other jobs go on; the retry resends from the bad record")
}

func TestRelaySplitsCallsAtTenEntries(t *testing.T) {
	t.Parallel()
	var recs []events.DynamoDBEventRecord
	for i := range 23 {
		recs = append(recs, history(fmt.Sprintf("job-%d", i))...)
	}
	f := &fakeSQS{}
	resp, err := newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: recs})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Len(t, f.sent[commandsURL], 23)
	require.Len(t, f.calls, 3)
	for _, c := range f.calls {
		require.LessOrEqual(t, len(c.Entries), 10)
	}
}

func TestRelayAnswersAnEmptyBatchWithAnEmptyList(t *testing.T) {
	t.Parallel()
	resp, err := newRelay(t, &fakeSQS{}).Handle(context.Background(), events.DynamoDBEvent{})
	require.NoError(t, err)
	require.NotNil(t, resp.BatchItemFailures, "an empty list, not null: full success")
	require.Empty(t, resp.BatchItemFailures)
}

func TestRelayPublishesANudgeAsItsCommandAndItsEvent(t *testing.T) {
	t.Parallel()
	recs := history("job-42", jobs.EventStarted)
	last := recs[len(recs)-1]
	nudged, err := jobs.FromStreamImage(last.Change.NewImage)
	require.NoError(t, err)
	before := nudged
	nudged.Version++
	nudged.Outbox = jobs.Message{ID: jobs.OutboxID("job-42", nudged.Version), Type: jobs.MessageRun, Version: nudged.Version}
	recs = append(recs, record("MODIFY", "job-42", &before, &nudged))
	f := &fakeSQS{}
	resp, err := newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: recs})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, []string{"job-42/v0", "job-42/v2"}, f.sent[commandsURL])
	require.Equal(t, []string{"job-42/v1", "job-42/v2"}, f.sent[eventsURL])
}

// The golden stream batch of events/ (the relay's sam local invoke sample)
// round-trips; the relay publishes job-42's command and completion, skips
// the intent marker and the TTL removal, and reports job-43's malformed
// image, the batch's fourth record, as the first record to retry.
func TestRelayPublishesTheGoldenStreamBatch(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../../events/dynamodb-jobs-stream.json")
	require.NoError(t, err)
	var ev events.DynamoDBEvent
	require.NoError(t, json.Unmarshal(raw, &ev))
	again, err := json.Marshal(ev)
	require.NoError(t, err)
	var back events.DynamoDBEvent
	require.NoError(t, json.Unmarshal(again, &back))
	require.Equal(t, ev, back)
	f := &fakeSQS{}
	resp, err := newRelay(t, f).Handle(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[3].Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Equal(t, []string{"job-42/v0"}, f.sent[commandsURL])
	require.Equal(t, []string{"job-42/v3"}, f.sent[eventsURL])
	for _, id := range append(f.sent[commandsURL], f.sent[eventsURL]...) {
		require.NotContains(t, id, "intent#")
	}
}

// The Jobs table's record of its live index's shard count
// ("config#live-shards", written once a store runs above 16 shards, and
// raised when one runs above the record) is no job: its stream records,
// between jobs' records, are skipped, and the jobs' messages go out. (The
// relay once failed the record, retried its batch until the on-failure
// queue took it, and held every job behind it meanwhile.)
func TestRelaySkipsTheLiveShardsRecord(t *testing.T) {
	t.Parallel()
	a := history("job-42", jobs.EventStarted)
	b := history("job-43", jobs.EventStarted)
	config := func(n string) map[string]events.DynamoDBAttributeValue {
		return map[string]events.DynamoDBAttributeValue{
			"job_id": events.NewStringAttribute("config#live-shards"), "live_shards": events.NewNumberAttribute(n),
		}
	}
	inserted := record(string(events.DynamoDBOperationTypeInsert), "config#live-shards", nil, nil)
	inserted.Change.NewImage = config("32")
	raised := record(string(events.DynamoDBOperationTypeModify), "config#live-shards", nil, nil)
	raised.Change.OldImage, raised.Change.NewImage = config("32"), config("64")
	f := &fakeSQS{}
	resp, err := newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{a[0], inserted, b[0], a[1], raised, b[1]}})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, []string{"job-42/v0", "job-43/v0"}, f.sent[commandsURL])
	require.Equal(t, []string{"job-42/v1", "job-43/v1"}, f.sent[eventsURL])
}

// Every body of the projector's golden batch decodes.
func TestTheGoldenEventsBatchDecodes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../../events/sqs-events-batch.json")
	require.NoError(t, err)
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(raw, &ev))
	require.Len(t, ev.Records, 4)
	for _, r := range ev.Records {
		e, err := outbox.DecodeEvent(r.Body)
		require.NoError(t, err, r.MessageId)
		require.Equal(t, e.JobID, r.Attributes["MessageGroupId"])
		require.Equal(t, e.EventID, r.Attributes["MessageDeduplicationId"])
	}
}

// An undecodable record stops its own job: the job's later versions are not
// sent before it (the retry resends from it); other jobs go on.
func TestRelayStopsAJobAtItsUndecodableRecord(t *testing.T) {
	t.Parallel()
	a := history("job-9", jobs.EventStarted, jobs.EventProgress)
	b := history("job-10", jobs.EventStarted)
	bad := a[1]
	bad.Change.NewImage = jobImage(jobs.Job{ID: "job-9", Status: "bogus", Version: 1,
		Outbox: jobs.Message{ID: "job-9/v1", Type: jobs.EventStarted, Version: 1}})
	f := &fakeSQS{}
	resp, err := newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{a[0], bad, b[0], a[2], b[1]}})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: bad.Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Equal(t, []string{"job-9/v0", "job-10/v0"}, f.sent[commandsURL])
	require.Equal(t, []string{"job-10/v1"}, f.sent[eventsURL], "job-9/v2 waits for v1")

	// Without a readable key the record could be any job's: nothing after it goes out.
	keyless := bad
	keyless.Change.Keys = nil
	f = &fakeSQS{}
	resp, err = newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{a[0], keyless, b[0]}})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: keyless.Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Equal(t, []string{"job-9/v0"}, f.sent[commandsURL])
}

// A record whose old and new images have the same version is not a
// transition (nothing was emitted): it is not published again.
func TestRelaySkipsARecordThatIsNotATransition(t *testing.T) {
	t.Parallel()
	a := history("job-11", jobs.EventStarted)
	same := a[1]
	same.Change.OldImage = same.Change.NewImage
	f := &fakeSQS{}
	resp, err := newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{same}})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Empty(t, f.sent[eventsURL])
}
