package jobitem_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// job42 is the image of a pending job whose creation emitted the run
// command.
func job42() map[string]events.DynamoDBAttributeValue {
	return map[string]events.DynamoDBAttributeValue{
		jobitem.AttrJobID:   events.NewStringAttribute("job-42"),
		jobitem.AttrTenant:  events.NewStringAttribute("t-1"),
		jobitem.AttrStatus:  events.NewStringAttribute(string(jobitem.StatusPending)),
		jobitem.AttrVersion: events.NewNumberAttribute("0"),
		jobitem.AttrOutbox: events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			jobitem.OutboxAttrID:   events.NewStringAttribute("job-42/v0"),
			jobitem.OutboxAttrType: events.NewStringAttribute(jobitem.MessageRun),
		}),
	}
}

// Only what is not a job item at all is ErrNotJob, which a stream reader
// skips: no item (the missing new image of a deleted item), an intent
// marker (its key "intent#<tenant>#<intent id>") and the table's record of
// its live index's shard count ("config#live-shards", written when a store
// runs above 16 shards): no job id holds a '#'. A job item that lacks
// its status or its key is malformed: an error naming the attribute, so
// that the message in its outbox is retried, not skipped and lost.
func TestOnlyNoItemAndAnIntentMarkerAreNotJobs(t *testing.T) {
	t.Parallel()
	marker := map[string]events.DynamoDBAttributeValue{
		jobitem.AttrJobID:    events.NewStringAttribute(jobitem.IntentKeyPrefix + "t-1#export-intent-7"),
		jobitem.AttrTenant:   events.NewStringAttribute("t-1"),
		jobitem.AttrIntentID: events.NewStringAttribute("export-intent-7"),
	}
	config := map[string]events.DynamoDBAttributeValue{
		jobitem.AttrJobID: events.NewStringAttribute("config#live-shards"),
		"live_shards":     events.NewNumberAttribute("32"),
	}
	for name, image := range map[string]map[string]events.DynamoDBAttributeValue{
		"no image": nil, "an empty image": {}, "an intent marker": marker, "the live shards' record": config,
	} {
		_, err := jobitem.FromStreamImage(image)
		require.ErrorIs(t, err, jobitem.ErrNotJob, name)
	}

	for attr, want := range map[string]string{
		jobitem.AttrStatus: "jobs: attribute status: missing",
		jobitem.AttrJobID:  "jobs: attribute job_id: missing",
	} {
		image := job42()
		delete(image, attr)
		_, err := jobitem.FromStreamImage(image)
		require.EqualError(t, err, want, "without %s", attr)
		require.NotErrorIs(t, err, jobitem.ErrNotJob, "without %s", attr)
	}
	noKey := job42()
	noKey[jobitem.AttrJobID] = events.NewStringAttribute("")
	_, err := jobitem.FromStreamImage(noKey)
	require.EqualError(t, err, "jobs: attribute job_id: empty")
	noStatus := job42()
	noStatus[jobitem.AttrStatus] = events.NewStringAttribute("")
	_, err = jobitem.FromStreamImage(noStatus)
	require.EqualError(t, err, `jobs: job "job-42": attribute status: unknown status ""`)
}

// Each of the five statuses decodes; any other is an error naming the job
// and the status.
func TestEveryStatusDecodesAndNoOther(t *testing.T) {
	t.Parallel()
	for _, s := range []jobitem.Status{jobitem.StatusPending, jobitem.StatusRunning, jobitem.StatusCompleted, jobitem.StatusFailed, jobitem.StatusCancelled} {
		image := job42()
		image[jobitem.AttrStatus] = events.NewStringAttribute(string(s))
		j, err := jobitem.FromStreamImage(image)
		require.NoError(t, err, s)
		require.Equal(t, s, j.Status)
		require.Equal(t, jobitem.Message{ID: "job-42/v0", Type: jobitem.MessageRun}, j.Outbox)
	}
	for _, s := range []string{"paused", "Pending", "intent"} {
		image := job42()
		image[jobitem.AttrStatus] = events.NewStringAttribute(s)
		_, err := jobitem.FromStreamImage(image)
		require.EqualError(t, err, `jobs: job "job-42": attribute status: unknown status "`+s+`"`)
		require.False(t, errors.Is(err, jobitem.ErrNotJob), s)
	}
}

// The first problem of an image is its error, whatever comes after it,
// and it is not ErrNotJob even when the status is what is wrong.
func TestAMalformedImageIsItsFirstProblem(t *testing.T) {
	t.Parallel()
	image := job42()
	image[jobitem.AttrStatus] = events.NewNumberAttribute("1")
	image[jobitem.AttrVersion] = events.NewStringAttribute("0")
	_, err := jobitem.FromStreamImage(image)
	require.EqualError(t, err, "jobs: attribute status: want S, have N 1")
	require.NotErrorIs(t, err, jobitem.ErrNotJob)
}
