package jobs

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestJobItemLayout(t *testing.T) {
	t.Parallel()
	j := Job{
		ID: "job-42", IntentID: "export-intent-7", Tenant: "t-1", Status: StatusCompleted,
		Generation: 2, Version: 3, LeaseOwner: "attempt-b", LeaseExpiresAt: time.UnixMilli(1793782860123).UTC(),
		Result:   Result{Key: "candidates/job-42/g0000000002/attempt-b.json", SHA256: "5e", Size: 10},
		Progress: 120, Outbox: Message{ID: "job-42/v3", Type: EventCompleted, Version: 3, Payload: map[string]string{"attempt_id": "attempt-b"}},
		Spec:  map[string]string{"source": "articles"},
		Error: Failure{}, CreatedAt: time.UnixMilli(1793782800000).UTC(), UpdatedAt: time.UnixMilli(1793782900000).UTC(),
		ExpiresAt: time.Unix(1796374900, 0).UTC(),
	}
	item := jobItem(&j, LiveShards)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	require.Equal(t, map[string]types.AttributeValue{
		"job_id": s("job-42"), "intent_id": s("export-intent-7"), "tenant": s("t-1"), "status": s("completed"),
		"generation": n("2"), "version": n("3"), "lease_owner": s("attempt-b"), "lease_expires_at": n("1793782860123"),
		"result_key": s("candidates/job-42/g0000000002/attempt-b.json"), "result_sha256": s("5e"), "result_size": n("10"),
		"progress": n("120"),
		"outbox": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"id": s("job-42/v3"), "type": s("job.completed"), "version": n("3"),
			"payload": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"attempt_id": s("attempt-b")}},
		}},
		"spec":       &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"source": s("articles")}},
		"created_at": n("1793782800000"), "updated_at": n("1793782900000"),
		"expires_at": n("1796374900"), // TTL: epoch seconds
		// The finished index's keys: a final job's shard, and the time of
		// its final transition with its id.
		"finished_shard": s("5"), "finished_key": s("1793782900000#job-42"),
	}, item)
	back, err := FromItem(item)
	require.NoError(t, err)
	require.Equal(t, j, back)
}

// TestLiveShardIsOnTheItemsOfLiveJobsOnly: a live job's item carries its
// live_shard, the key of the sparse live index, and not the finished
// index's keys; a final job's carries the finished index's keys
// (finished_shard, finished_key) and no live_shard.
func TestLiveShardIsOnTheItemsOfLiveJobsOnly(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1793782900123).UTC()
	for _, st := range []Status{StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled} {
		j := Job{ID: "job-42", Status: st, UpdatedAt: at}
		item := jobItem(&j, LiveShards)
		if st.Final() {
			require.NotContains(t, item, "live_shard", st)
			require.Equal(t, &types.AttributeValueMemberS{Value: "5"}, item["finished_shard"], st)
			require.Equal(t, &types.AttributeValueMemberS{Value: "1793782900123#job-42"}, item["finished_key"], st)
		} else {
			require.Equal(t, &types.AttributeValueMemberS{Value: "5"}, item["live_shard"], st)
			require.NotContains(t, item, "finished_shard", st)
			require.NotContains(t, item, "finished_key", st)
		}
		back, err := FromItem(item)
		require.NoError(t, err)
		require.Equal(t, j, back, "the index keys follow from the id, the status and updated_at; nothing decodes them")
	}
}

// TestFinishedKeysSortByTimeThenID: keys compare as (time, id) do, so a
// cursor at a key resumes exactly after it; FinishedBound(t) sorts after
// every key before t and before every key at t or later.
func TestFinishedKeysSortByTimeThenID(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1793782900000).UTC()
	require.Equal(t, "1793782900000#job-42", FinishedKey("job-42", t0))
	require.Equal(t, "0000000000999#a", FinishedKey("a", time.UnixMilli(999)), "13 digits, zero-padded")
	require.Equal(t, "0000000000000", FinishedBound(time.UnixMilli(-5)), "before 1970 counts as 1970")
	rapid.Check(t, func(t *rapid.T) {
		idChars := rapid.SampledFrom([]rune("abcXYZ019_-"))
		a := rapid.StringOfN(idChars, 1, 8, -1).Draw(t, "a")
		b := rapid.StringOfN(idChars, 1, 8, -1).Draw(t, "b")
		ta := rapid.Int64Range(0, 9_999_999_999_999).Draw(t, "ta")
		tb := rapid.Int64Range(0, 9_999_999_999_999).Draw(t, "tb")
		ka, kb := FinishedKey(a, time.UnixMilli(ta)), FinishedKey(b, time.UnixMilli(tb))
		want := ta < tb || ta == tb && a < b
		require.Equal(t, want, ka < kb, "%s vs %s", ka, kb)
		require.Equal(t, ta < tb, ka < FinishedBound(time.UnixMilli(tb)), "%s vs bound %d", ka, tb)
	})
}

// TestLiveShardIsFNV1aModSixteen pins the hash: every writer, in every
// version of the code, must put a job in the same shard. The golden values
// are 32-bit FNV-1a computed independently (offset basis 0x811c9dc5, prime
// 0x01000193), modulo 16.
func TestLiveShardIsFNV1aModSixteen(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{"job-42": "5", "job-43": "2", "a": "12"} {
		require.Equal(t, want, LiveShard(id), id)
	}
	seen := map[string]int{}
	for i := range 1600 {
		s := LiveShard(fmt.Sprintf("job-%d", i))
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		require.True(t, n >= 0 && n < LiveShards, s)
		seen[s]++
	}
	require.Len(t, seen, LiveShards, "every shard is used")
	for s, n := range seen {
		require.Greater(t, n, 50, "shard %s holds %d of 1600 ids: the hash does not spread", s, n)
	}
}

func TestJobItemRoundTrip(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		j := anyJob.Draw(t, "job")
		back, err := FromItem(jobItem(&j, LiveShards))
		require.NoError(t, err)
		require.Equal(t, j, back)
	})
}

// TestStreamImageDecodesLikeTheItem: the stream image of an item, as Lambda
// delivers it, decodes to the job the item holds.
func TestStreamImageDecodesLikeTheItem(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		j := anyJob.Draw(t, "job")
		back, err := FromStreamImage(streamImage(t, jobItem(&j, LiveShards)))
		require.NoError(t, err)
		require.Equal(t, j, back)
	})
}

// streamImage is the stream image of an item: what Lambda would deliver
// for it. (It encodes; FromStreamImage is the only decoder.)
func streamImage(t require.TestingT, item map[string]types.AttributeValue) map[string]events.DynamoDBAttributeValue {
	image := make(map[string]events.DynamoDBAttributeValue, len(item))
	for k, av := range item {
		switch v := av.(type) {
		case *types.AttributeValueMemberS:
			image[k] = events.NewStringAttribute(v.Value)
		case *types.AttributeValueMemberN:
			image[k] = events.NewNumberAttribute(v.Value)
		case *types.AttributeValueMemberM:
			image[k] = events.NewMapAttribute(streamImage(t, v.Value))
		default:
			require.Failf(t, "unexpected attribute type", "%s: %T", k, av)
		}
	}
	return image
}

// anyJob draws a job with any field values the item can hold.
var anyJob = rapid.Custom(func(t *rapid.T) Job {
	text := rapid.StringMatching(`[a-z0-9/_-]{1,12}`)
	strMap := rapid.MapOfN(text, rapid.String(), 0, 3)
	millis := rapid.Custom(func(t *rapid.T) time.Time {
		if rapid.Bool().Draw(t, "zero") {
			return time.Time{}
		}
		return time.UnixMilli(rapid.Int64Range(1, 4e12).Draw(t, "ms")).UTC()
	})
	j := Job{
		ID: text.Draw(t, "id"), IntentID: rapid.String().Draw(t, "intent"), Tenant: text.Draw(t, "tenant"),
		Status:     rapid.SampledFrom([]Status{StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled}).Draw(t, "status"),
		Generation: rapid.Int64Min(0).Draw(t, "g"), Version: rapid.Int64Min(0).Draw(t, "v"),
		LeaseOwner: rapid.StringMatching(`[a-z0-9-]{0,8}`).Draw(t, "owner"), LeaseExpiresAt: millis.Draw(t, "lease"),
		Progress:  rapid.Int64Min(0).Draw(t, "progress"),
		Outbox:    Message{ID: text.Draw(t, "oid"), Type: text.Draw(t, "otype"), Version: rapid.Int64Min(0).Draw(t, "ov")},
		CreatedAt: time.UnixMilli(rapid.Int64Range(0, 4e12).Draw(t, "created")).UTC(),
		UpdatedAt: time.UnixMilli(rapid.Int64Range(0, 4e12).Draw(t, "updated")).UTC(),
	}
	if p := strMap.Draw(t, "payload"); len(p) > 0 {
		j.Outbox.Payload = p
	}
	if s := strMap.Draw(t, "spec"); len(s) > 0 {
		j.Spec = s
	}
	if rapid.Bool().Draw(t, "result") {
		j.Result = Result{Key: text.Draw(t, "key"), SHA256: text.Draw(t, "sha"), Size: rapid.Int64Min(0).Draw(t, "size")}
	}
	if rapid.Bool().Draw(t, "failed") {
		j.Error = Failure{Code: text.Draw(t, "code"), Message: rapid.String().Draw(t, "msg")}
	}
	if rapid.Bool().Draw(t, "ttl") {
		j.ExpiresAt = time.Unix(rapid.Int64Range(1, 4e9).Draw(t, "expires"), 0).UTC()
	}
	return j
})

func TestDecodeRejectsForeignItems(t *testing.T) {
	t.Parallel()
	_, err := FromItem(map[string]types.AttributeValue{"job_id": &types.AttributeValueMemberS{Value: "job-42"},
		"status": &types.AttributeValueMemberS{Value: "running"}, "version": &types.AttributeValueMemberS{Value: "3"}})
	require.ErrorContains(t, err, "attribute version: want N")
	// An intent marker is not a job.
	m := intentMarker{Key: IntentKey("t-1", "i"), Tenant: "t-1", IntentID: "i", JobID: "job-42", SpecSHA256: specHash(nil),
		CreatedAt: time.UnixMilli(1793782800123).UTC(), ExpiresAt: time.Unix(1796374800, 0).UTC()}
	_, err = FromItem(markerItem(&m))
	require.Error(t, err)
	back, err := decodeMarker(markerItem(&m))
	require.NoError(t, err)
	require.Equal(t, m, back)
}

// An empty outbox payload is not written: DynamoDB Local's stream drops the
// value of an empty nested map, which would make the image undecodable.
func TestAnEmptyOutboxPayloadIsLeftOut(t *testing.T) {
	t.Parallel()
	j := Job{ID: "job-42", Outbox: Message{ID: "job-42/v0", Type: MessageRun}}
	out := outboxValue(j.Outbox).(*types.AttributeValueMemberM).Value
	require.NotContains(t, out, "payload")
	with := outboxValue(Message{ID: "job-42/v1", Type: EventStarted, Version: 1, Payload: map[string]string{PayloadAttemptID: "a"}})
	require.Contains(t, with.(*types.AttributeValueMemberM).Value, "payload")
}
