package jobs_test

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// completed42 is job-42 of the running example once B's accept has landed,
// as the golden images show it.
var completed42 = jobs.Job{
	ID: "job-42", IntentID: "export-intent-7", Tenant: "t-1", Status: jobs.StatusCompleted,
	Generation: 2, Version: 3, LeaseOwner: "attempt-b", LeaseExpiresAt: time.UnixMilli(1793782980000).UTC(),
	Result:    jobs.Result{Key: "candidates/job-42/g0000000002/attempt-b.json", SHA256: strings.Repeat("5e", 32), Size: 2048},
	Progress:  120,
	Outbox:    jobs.Message{ID: "job-42/v3", Type: jobs.EventCompleted, Version: 3},
	Spec:      map[string]string{"source": "articles"},
	CreatedAt: time.UnixMilli(1793782800000).UTC(), UpdatedAt: time.UnixMilli(1793782950000).UTC(),
	ExpiresAt: time.Unix(1796374950, 0).UTC(),
	History: []jobs.Transition{
		{Version: 0, Status: jobs.StatusPending, Generation: 0, At: time.UnixMilli(1793782800000).UTC(), Event: jobs.MessageRun},
		{Version: 1, Status: jobs.StatusRunning, Generation: 1, At: time.UnixMilli(1793782810000).UTC(), Event: jobs.EventStarted},
		{Version: 2, Status: jobs.StatusRunning, Generation: 2, At: time.UnixMilli(1793782920000).UTC(), Event: jobs.EventStarted},
		{Version: 3, Status: jobs.StatusCompleted, Generation: 2, At: time.UnixMilli(1793782950000).UTC(), Event: jobs.EventCompleted},
	},
}

// TestFromStreamImageGolden decodes the images of a stream event as Lambda
// delivers it (../../events/dynamodb-jobs-stream.json): job items decode to the job and
// the message its transition emitted; the intent marker's record and a
// missing image are ErrNotJob; a malformed image is an error naming the
// attribute.
func TestFromStreamImageGolden(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../events/dynamodb-jobs-stream.json")
	require.NoError(t, err)
	var ev events.DynamoDBEvent
	require.NoError(t, json.Unmarshal(raw, &ev))
	require.Len(t, ev.Records, 5)

	// INSERT of job-42: the run command.
	created, err := jobs.FromStreamImage(ev.Records[0].Change.NewImage)
	require.NoError(t, err)
	require.Equal(t, jobs.Job{
		ID: "job-42", IntentID: "export-intent-7", Tenant: "t-1", Status: jobs.StatusPending,
		Outbox:    jobs.Message{ID: "job-42/v0", Type: jobs.MessageRun},
		Spec:      map[string]string{"source": "articles"},
		CreatedAt: time.UnixMilli(1793782800000).UTC(), UpdatedAt: time.UnixMilli(1793782800000).UTC(),
		History: completed42.History[:1],
	}, created)

	// INSERT of the intent marker: not a job.
	_, err = jobs.FromStreamImage(ev.Records[1].Change.NewImage)
	require.ErrorIs(t, err, jobs.ErrNotJob)

	// MODIFY of job-42: B's accept, with the image before it.
	mod := ev.Records[2].Change
	done, err := jobs.FromStreamImage(mod.NewImage)
	require.NoError(t, err)
	require.Equal(t, completed42, done)
	before, err := jobs.FromStreamImage(mod.OldImage)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusRunning, before.Status)
	require.Equal(t, int64(2), before.Version)
	require.Equal(t, jobs.Message{ID: "job-42/v2", Type: jobs.EventStarted, Version: 2, Payload: map[string]string{
		jobs.PayloadAttemptID: "attempt-b", jobs.PayloadPreviousAttemptID: "attempt-a",
	}}, before.Outbox)
	require.Equal(t, completed42.History[:3], before.History, "the history's slots, in version order")

	// A malformed image: the version is a string.
	_, err = jobs.FromStreamImage(ev.Records[3].Change.NewImage)
	require.EqualError(t, err, "jobs: attribute version: want N, have S")
	require.NotErrorIs(t, err, jobs.ErrNotJob)

	// REMOVE by the TTL: no new image, and the old one is the ended job.
	_, err = jobs.FromStreamImage(ev.Records[4].Change.NewImage)
	require.ErrorIs(t, err, jobs.ErrNotJob)
	removed, err := jobs.FromStreamImage(ev.Records[4].Change.OldImage)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCancelled, removed.Status)
	require.Equal(t, jobs.Failure{Code: jobs.CodeCancelled, Message: "the client withdrew the export"}, removed.Error)
}

// TestFromItemGolden decodes the same job-42 item as the SDK returns it.
func TestFromItemGolden(t *testing.T) {
	t.Parallel()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	m := func(v map[string]types.AttributeValue) types.AttributeValue {
		return &types.AttributeValueMemberM{Value: v}
	}
	item := map[string]types.AttributeValue{
		"job_id": s("job-42"), "intent_id": s("export-intent-7"), "tenant": s("t-1"), "status": s("completed"),
		"generation": n("2"), "version": n("3"), "lease_owner": s("attempt-b"), "lease_expires_at": n("1793782980000"),
		"result_key": s("candidates/job-42/g0000000002/attempt-b.json"), "result_sha256": s(strings.Repeat("5e", 32)),
		"result_size": n("2048"), "progress": n("120"),
		"outbox":     m(map[string]types.AttributeValue{"id": s("job-42/v3"), "type": s("job.completed"), "version": n("3")}),
		"spec":       m(map[string]types.AttributeValue{"source": s("articles")}),
		"created_at": n("1793782800000"), "updated_at": n("1793782950000"), "expires_at": n("1796374950"),
		// The history's slots, in no order.
		"h3": s("cmw1w1yeo3.2"), "h1": s("smw1vyyds1.1"), "h0": s("pmw1vyqo00.0"), "h2": s("smw1w1b9c2.2"),
	}
	j, err := jobs.FromItem(item)
	require.NoError(t, err)
	require.Equal(t, completed42, j)

	// An accept before the payload was dropped repeated the attempt and the
	// result key in it; such an item still reads, payload and all.
	old := maps.Clone(item)
	old["outbox"] = m(map[string]types.AttributeValue{"id": s("job-42/v3"), "type": s("job.completed"), "version": n("3"),
		"payload": m(map[string]types.AttributeValue{
			"attempt_id": s("attempt-b"), "result_key": s("candidates/job-42/g0000000002/attempt-b.json"),
		})})
	j, err = jobs.FromItem(old)
	require.NoError(t, err)
	want := completed42
	want.Outbox.Payload = map[string]string{"attempt_id": "attempt-b", "result_key": "candidates/job-42/g0000000002/attempt-b.json"}
	require.Equal(t, want, j)

	for name, tc := range map[string]struct {
		attr  string
		value types.AttributeValue
		want  string
	}{
		"version as a string":  {"version", s("3"), "jobs: attribute version: want N, have S"},
		"fractional progress":  {"progress", n("1.5"), "jobs: attribute progress: want an integer N, have N 1.5"},
		"outbox as a string":   {"outbox", s("job-42/v3"), "jobs: attribute outbox: want M, have S"},
		"payload value as a N": {"outbox", m(map[string]types.AttributeValue{"id": s("job-42/v3"), "payload": m(map[string]types.AttributeValue{"attempt_id": n("7")})}), "jobs: attribute outbox.payload.attempt_id: want S, have N 7"},
		"an unknown status":    {"status", s("paused"), `jobs: job "job-42": attribute status: unknown status "paused"`},
	} {
		bad := make(map[string]types.AttributeValue, len(item))
		for k, v := range item {
			bad[k] = v
		}
		bad[tc.attr] = tc.value
		_, err := jobs.FromItem(bad)
		require.ErrorContains(t, err, tc.want, name)
		require.NotErrorIs(t, err, jobs.ErrNotJob, name)
	}

	// A history slot that holds no entry of its version is skipped, not
	// an error (the history is diagnostic): the job reads with the rest of
	// its history, v2's entry missing.
	for name, v := range map[string]types.AttributeValue{
		"a history entry as a N":   n("2"),
		"a malformed entry":        s("smw1w1b9c2"),
		"an unknown kind letter":   s("zmw1w1b9c2.2"),
		"an entry in another slot": s("smw1w1b9c22.2"),
		"a negative version":       s("smw1w1b9c-2.2"),
		"no generation":            s("smw1w1b9c222"),
	} {
		bad := maps.Clone(item)
		bad["h2"] = v
		j, err := jobs.FromItem(bad)
		require.NoError(t, err, name)
		want := completed42
		want.History = slices.Delete(slices.Clone(want.History), 2, 3)
		require.Equal(t, want, j, name)
	}

	// An intent marker, and no item at all, are not jobs.
	_, err = jobs.FromItem(map[string]types.AttributeValue{
		"job_id": s(jobs.IntentKey("t-1", "export-intent-7")), "tenant": s("t-1"), "intent_id": s("export-intent-7"),
		"created_job_id": s("job-42"), "created_at": n("1793782800000"), "expires_at": n("1796374800"),
	})
	require.ErrorIs(t, err, jobs.ErrNotJob)
	_, err = jobs.FromItem(nil)
	require.ErrorIs(t, err, jobs.ErrNotJob)
}
