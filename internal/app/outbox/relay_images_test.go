package outbox_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// A stream whose view type lacks the images (KEYS_ONLY, NEW_IMAGE,
// OLD_IMAGE) gives records the relay cannot publish as it should: without
// the new image the transition's message is unknown, and a modification
// without its old image would go out with its whole progress as its delta.
// Each such record is reported as failed (retried, then sent to the
// on-failure destination), and stops its own job's later records; it is
// never acknowledged as if it carried nothing. A removal (TTL) needs no
// image.
func TestRelayFailsARecordWithoutTheImagesItNeeds(t *testing.T) {
	t.Parallel()
	a := history("job-42", jobs.EventStarted, jobs.EventProgress)
	b := history("job-43", jobs.EventStarted)
	for name, strip := range map[string]func(r *events.DynamoDBEventRecord){
		"MODIFY without images":   func(r *events.DynamoDBEventRecord) { r.Change.NewImage, r.Change.OldImage = nil, nil },
		"MODIFY, new image only":  func(r *events.DynamoDBEventRecord) { r.Change.OldImage = nil },
		"MODIFY, old image only":  func(r *events.DynamoDBEventRecord) { r.Change.NewImage = nil },
		"MODIFY, empty new image": func(r *events.DynamoDBEventRecord) { r.Change.NewImage = map[string]events.DynamoDBAttributeValue{} },
	} {
		bad := a[1]
		strip(&bad)
		f := &fakeSQS{}
		resp, err := newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{a[0], bad, a[2], b[0], b[1]}})
		require.NoError(t, err, name)
		require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: bad.Change.SequenceNumber}}, resp.BatchItemFailures, name)
		require.Equal(t, []string{"job-42/v0", "job-43/v0"}, f.sent[commandsURL], name)
		require.Equal(t, []string{"job-43/v1"}, f.sent[eventsURL], "%s: job-42's later versions wait for the retry", name)
	}

	insert := a[0]
	insert.Change.NewImage = nil
	f := &fakeSQS{}
	resp, err := newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{insert}})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: insert.Change.SequenceNumber}}, resp.BatchItemFailures, "an INSERT without its new image")
	require.Empty(t, f.sent)

	remove := a[2]
	remove.EventName, remove.Change.NewImage, remove.Change.OldImage = "REMOVE", nil, nil
	resp, err = newRelay(t, f).Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{remove}})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "a removal carries no message, with or without images")
	require.Empty(t, f.sent)
}
