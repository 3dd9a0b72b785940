package jobs

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/internal/base/ddbitem"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// The attributes of the Jobs table's items beyond a job's own
// (jobitem.Attr*): the indexes' keys, and the intent markers'.
const (
	// attrLiveShard is the live index's hash key, LiveShardOf(job id,
	// the writer's count), on the items of live jobs only. The decoder
	// does not read it: it follows from the id, the status and the count.
	attrLiveShard = "live_shard"
	// attrFinishedShard and attrFinishedKey are the finished index's keys,
	// LiveShardOf(job id, the writer's count) and FinishedKey(job id,
	// updated_at), on the items of final jobs only, written by the final
	// transition. The decoder does not read them either: they follow from
	// the id, the status, the count and updated_at.
	attrFinishedShard = "finished_shard"
	attrFinishedKey   = "finished_key"

	// Intent markers only.
	attrCreatedJobID = "created_job_id"
	attrSpecSHA256   = "spec_sha256"
)

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
func millis(t time.Time) types.AttributeValue { return num(t.UnixMilli()) }

// seconds encodes a TTL: DynamoDB's TTL reads epoch seconds.
func seconds(t time.Time) types.AttributeValue { return num(t.Unix()) }

func strMap(m map[string]string) types.AttributeValue {
	av := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		av[k] = str(v)
	}
	return &types.AttributeValueMemberM{Value: av}
}

// outboxValue encodes a message. An empty payload is left out rather than
// written as an empty map: DynamoDB Local's stream drops the value of an
// empty map nested in a map, so its images would not decode, and a missing
// payload decodes as none just the same.
func outboxValue(m Message) types.AttributeValue {
	v := map[string]types.AttributeValue{
		jobitem.OutboxAttrID: str(m.ID), jobitem.OutboxAttrType: str(m.Type), jobitem.OutboxAttrVersion: num(m.Version),
	}
	if len(m.Payload) > 0 {
		v[jobitem.OutboxAttrPayload] = strMap(m.Payload)
	}
	return &types.AttributeValueMemberM{Value: v}
}

func failureValue(f Failure) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		jobitem.FailureAttrCode: str(f.Code), jobitem.FailureAttrMessage: str(f.Message),
	}}
}

// jobItem encodes a job. Zero optional attributes are left out.
func jobItem(j *Job, shards int) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		jobitem.AttrJobID:      str(j.ID),
		jobitem.AttrIntentID:   str(j.IntentID),
		jobitem.AttrTenant:     str(j.Tenant),
		jobitem.AttrStatus:     str(string(j.Status)),
		jobitem.AttrGeneration: num(j.Generation),
		jobitem.AttrVersion:    num(j.Version),
		jobitem.AttrProgress:   num(j.Progress),
		jobitem.AttrOutbox:     outboxValue(j.Outbox),
		jobitem.AttrCreatedAt:  millis(j.CreatedAt),
		jobitem.AttrUpdatedAt:  millis(j.UpdatedAt),
	}
	if j.LeaseOwner != "" {
		item[jobitem.AttrLeaseOwner] = str(j.LeaseOwner)
	}
	if !j.LeaseExpiresAt.IsZero() {
		item[jobitem.AttrLeaseExpiresAt] = millis(j.LeaseExpiresAt)
	}
	if j.Result != (Result{}) {
		item[jobitem.AttrResultKey] = str(j.Result.Key)
		item[jobitem.AttrResultSHA256] = str(j.Result.SHA256)
		item[jobitem.AttrResultSize] = num(j.Result.Size)
	}
	if len(j.Spec) > 0 {
		item[jobitem.AttrSpec] = strMap(j.Spec)
	}
	if j.Error != (Failure{}) {
		item[jobitem.AttrError] = failureValue(j.Error)
	}
	if !j.ExpiresAt.IsZero() {
		item[jobitem.AttrExpiresAt] = seconds(j.ExpiresAt)
	}
	for slot, entry := range jobitem.EncodeHistory(j.History) {
		item[slot] = str(entry)
	}
	if j.Status.Final() {
		item[attrFinishedShard] = str(LiveShardOf(j.ID, shards))
		item[attrFinishedKey] = str(FinishedKey(j.ID, j.UpdatedAt))
	} else {
		item[attrLiveShard] = str(LiveShardOf(j.ID, shards))
	}
	return item
}

func markerItem(m *intentMarker) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		jobitem.AttrJobID:     str(m.Key),
		jobitem.AttrTenant:    str(m.Tenant),
		jobitem.AttrIntentID:  str(m.IntentID),
		attrCreatedJobID:      str(m.JobID),
		attrSpecSHA256:        str(m.SpecSHA256),
		jobitem.AttrCreatedAt: millis(m.CreatedAt),
		jobitem.AttrExpiresAt: seconds(m.ExpiresAt),
	}
}

// FromItem decodes an item of the Jobs table, as the SDK returns it, into a
// Job, with the one decoder of the item (jobitem.Decode), which
// FromStreamImage uses too: an item and its image decode alike, with the
// same errors. An item that is not a job is an error matching ErrNotJob;
// an attribute of the wrong type, or an unknown status, is an error naming
// it.
func FromItem(item map[string]types.AttributeValue) (Job, error) {
	return jobitem.Decode(ddbitem.New(item))
}

func decodeMarker(item map[string]types.AttributeValue) (intentMarker, error) {
	d := ddbitem.New(item)
	m := intentMarker{
		Key:        d.OptString(jobitem.AttrJobID),
		Tenant:     d.OptString(jobitem.AttrTenant),
		IntentID:   d.OptString(jobitem.AttrIntentID),
		JobID:      d.OptString(attrCreatedJobID),
		SpecSHA256: d.OptString(attrSpecSHA256),
		CreatedAt:  d.OptMillis(jobitem.AttrCreatedAt),
		ExpiresAt:  d.OptSeconds(jobitem.AttrExpiresAt),
	}
	if err := d.Err(); err != nil {
		return m, fmt.Errorf("jobs: %w", err)
	}
	if m.JobID == "" {
		return m, fmt.Errorf("jobs: item %q is not an intent marker", m.Key)
	}
	return m, nil
}

// patchValues lists what a patch sets, attribute by attribute, for an
// update expression.
func patchValues(p *patch) []attrValue {
	vals := []attrValue{
		{jobitem.AttrStatus, str(string(p.status))},
		{jobitem.AttrGeneration, num(p.generation)},
		{jobitem.AttrVersion, num(p.version)},
		{jobitem.AttrOutbox, outboxValue(p.outbox)},
		{jobitem.AttrUpdatedAt, millis(p.updatedAt)},
		// One slot of the history, whichever slots the item has.
		{jobitem.HistorySlot(p.version), str(jobitem.EncodeTransition(p.entry()))},
	}
	if p.leaseOwner != nil {
		vals = append(vals, attrValue{jobitem.AttrLeaseOwner, str(*p.leaseOwner)})
	}
	if p.leaseExpiresAt != nil {
		vals = append(vals, attrValue{jobitem.AttrLeaseExpiresAt, millis(*p.leaseExpiresAt)})
	}
	if p.result != nil {
		vals = append(vals,
			attrValue{jobitem.AttrResultKey, str(p.result.Key)},
			attrValue{jobitem.AttrResultSHA256, str(p.result.SHA256)},
			attrValue{jobitem.AttrResultSize, num(p.result.Size)})
	}
	if p.progress != nil {
		vals = append(vals, attrValue{jobitem.AttrProgress, num(*p.progress)})
	}
	if p.failure != nil {
		vals = append(vals, attrValue{jobitem.AttrError, failureValue(*p.failure)})
	}
	if p.expiresAt != nil {
		vals = append(vals, attrValue{jobitem.AttrExpiresAt, seconds(*p.expiresAt)})
	}
	return vals
}

type attrValue struct {
	name  string
	value types.AttributeValue
}
