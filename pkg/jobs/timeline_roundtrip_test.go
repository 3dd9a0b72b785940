package jobs_test

import (
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// A running entry whose event no store writes (a hand-built one, or one
// without its event) reads as a renewal, in memory as after a DynamoDB
// or a PostgreSQL round trip: its slot holds a renewal's letter, which is
// what Describe makes of a running entry without its event.
func TestAnEntryOfNoKnownEventDescribesAlikeAfterARoundTrip(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1793782800000).UTC()
	for _, event := range []string{"", "job.unknown"} {
		j := jobs.Job{ID: "job-42", Tenant: "t-1", IntentID: "i-1", Status: jobs.StatusRunning, Generation: 1, Version: 5,
			CreatedAt: at, UpdatedAt: at,
			History: []jobs.Transition{{Version: 5, Status: jobs.StatusRunning, Generation: 1, At: at, Event: event}}}
		inMemory := jobs.Describe(j.History)
		require.Equal(t, jobs.StepRenewed, inMemory[0].Kind, "%q", event)

		image := map[string]events.DynamoDBAttributeValue{
			"job_id": events.NewStringAttribute(j.ID), "status": events.NewStringAttribute(string(j.Status)),
			"generation": events.NewNumberAttribute("1"), "version": events.NewNumberAttribute("5"),
		}
		for slot, entry := range jobitem.EncodeHistory(j.History) {
			image[slot] = events.NewStringAttribute(entry)
		}
		dynamo, err := jobitem.FromStreamImage(image)
		require.NoError(t, err)
		pgImage, err := jobitem.EncodePostgresImage(j)
		require.NoError(t, err)
		postgres, err := jobitem.FromPostgresImage(pgImage)
		require.NoError(t, err)
		for name, back := range map[string]jobs.Job{"DynamoDB": dynamo, "PostgreSQL": postgres} {
			require.Len(t, back.History, 1, name)
			require.Equal(t, jobs.EventProgress, back.History[0].Event, "%s %q", name, event)
			steps := jobs.Describe(back.History)
			require.Equal(t, inMemory[0].Kind, steps[0].Kind, "%s %q: described alike", name, event)
		}
	}
}
