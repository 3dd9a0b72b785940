package jobs

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/internal/base/ddbitem"
)

// Attribute names of the Jobs table. The item layout is documented on Job
// and in docs/ARCHITECTURE.md; template.yaml's JobsTable declares the key
// (job_id) and the TTL attribute (expires_at).
const (
	attrJobID          = "job_id"
	attrIntentID       = "intent_id"
	attrTenant         = "tenant"
	attrStatus         = "status"
	attrGeneration     = "generation"
	attrVersion        = "version"
	attrLeaseOwner     = "lease_owner"
	attrLeaseExpiresAt = "lease_expires_at"
	attrResultKey      = "result_key"
	attrResultSHA256   = "result_sha256"
	attrResultSize     = "result_size"
	attrProgress       = "progress"
	attrOutbox         = "outbox"
	attrSpec           = "spec"
	attrError          = "error"
	attrCreatedAt      = "created_at"
	attrUpdatedAt      = "updated_at"
	attrExpiresAt      = "expires_at"
	// attrLiveShard is the live index's hash key, LiveShard(job id), on the
	// items of live jobs only. FromItem does not read it: it follows from
	// the id and the status.
	attrLiveShard = "live_shard"
	// attrFinishedShard and attrFinishedKey are the finished index's keys,
	// LiveShard(job id) and FinishedKey(job id, updated_at), on the items of
	// final jobs only, written by the final transition. FromItem does not
	// read them either: they follow from the id, the status and updated_at.
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
	v := map[string]types.AttributeValue{"id": str(m.ID), "type": str(m.Type), "version": num(m.Version)}
	if len(m.Payload) > 0 {
		v["payload"] = strMap(m.Payload)
	}
	return &types.AttributeValueMemberM{Value: v}
}

func failureValue(f Failure) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"code": str(f.Code), "message": str(f.Message),
	}}
}

// jobItem encodes a job. Zero optional attributes are left out.
func jobItem(j *Job) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		attrJobID:      str(j.ID),
		attrIntentID:   str(j.IntentID),
		attrTenant:     str(j.Tenant),
		attrStatus:     str(string(j.Status)),
		attrGeneration: num(j.Generation),
		attrVersion:    num(j.Version),
		attrProgress:   num(j.Progress),
		attrOutbox:     outboxValue(j.Outbox),
		attrCreatedAt:  millis(j.CreatedAt),
		attrUpdatedAt:  millis(j.UpdatedAt),
	}
	if j.LeaseOwner != "" {
		item[attrLeaseOwner] = str(j.LeaseOwner)
	}
	if !j.LeaseExpiresAt.IsZero() {
		item[attrLeaseExpiresAt] = millis(j.LeaseExpiresAt)
	}
	if j.Result != (Result{}) {
		item[attrResultKey] = str(j.Result.Key)
		item[attrResultSHA256] = str(j.Result.SHA256)
		item[attrResultSize] = num(j.Result.Size)
	}
	if len(j.Spec) > 0 {
		item[attrSpec] = strMap(j.Spec)
	}
	if j.Error != (Failure{}) {
		item[attrError] = failureValue(j.Error)
	}
	if !j.ExpiresAt.IsZero() {
		item[attrExpiresAt] = seconds(j.ExpiresAt)
	}
	if j.Status.Final() {
		item[attrFinishedShard] = str(LiveShard(j.ID))
		item[attrFinishedKey] = str(FinishedKey(j.ID, j.UpdatedAt))
	} else {
		item[attrLiveShard] = str(LiveShard(j.ID))
	}
	return item
}

func markerItem(m *intentMarker) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrJobID:        str(m.Key),
		attrTenant:       str(m.Tenant),
		attrIntentID:     str(m.IntentID),
		attrCreatedJobID: str(m.JobID),
		attrSpecSHA256:   str(m.SpecSHA256),
		attrCreatedAt:    millis(m.CreatedAt),
		attrExpiresAt:    seconds(m.ExpiresAt),
	}
}

// ErrNotJob is returned by FromItem and FromStreamImage for an item that is
// not a job: an intent marker, or no item at all (the missing new image of a
// stream record for a deleted item). A stream reader skips those.
var ErrNotJob = errors.New("not a job item")

// FromItem decodes an item of the Jobs table, as the SDK returns it, into a
// Job; the Job carries the message its last transition emitted (Outbox). It
// is the one decoder of the item: the stores, the relay, the projector's
// recovery and the sweeper all read items with it (stream images through
// FromStreamImage). An item that is not a job is an error matching
// ErrNotJob; an attribute of the wrong type, or an unknown status, is an
// error naming it.
func FromItem(item map[string]types.AttributeValue) (Job, error) {
	d := ddbitem.New(item)
	j := Job{
		ID:             d.OptString(attrJobID),
		IntentID:       d.OptString(attrIntentID),
		Tenant:         d.OptString(attrTenant),
		Status:         Status(d.OptString(attrStatus)),
		Generation:     d.OptInt(attrGeneration),
		Version:        d.OptInt(attrVersion),
		LeaseOwner:     d.OptString(attrLeaseOwner),
		LeaseExpiresAt: d.OptMillis(attrLeaseExpiresAt),
		Result: Result{
			Key: d.OptString(attrResultKey), SHA256: d.OptString(attrResultSHA256), Size: d.OptInt(attrResultSize),
		},
		Progress:  d.OptInt(attrProgress),
		Spec:      d.OptStringMap(attrSpec),
		CreatedAt: d.OptMillis(attrCreatedAt),
		UpdatedAt: d.OptMillis(attrUpdatedAt),
		ExpiresAt: d.OptSeconds(attrExpiresAt),
	}
	if od, ok := d.OptMap(attrOutbox); ok {
		j.Outbox = Message{ID: od.OptString("id"), Type: od.OptString("type"), Version: od.OptInt("version"), Payload: od.OptStringMap("payload")}
	}
	if ed, ok := d.OptMap(attrError); ok {
		j.Error = Failure{Code: ed.OptString("code"), Message: ed.OptString("message")}
	}
	if err := d.Err(); err != nil {
		return j, fmt.Errorf("jobs: %w", err)
	}
	switch j.Status {
	case "":
		return j, fmt.Errorf("jobs: item %q: %w", j.ID, ErrNotJob)
	case StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled:
		if j.ID == "" {
			return j, fmt.Errorf("jobs: item without %s: %w", attrJobID, ErrNotJob)
		}
		return j, nil
	}
	return j, fmt.Errorf("jobs: job %q: attribute %s: unknown status %q", j.ID, attrStatus, j.Status)
}

func decodeMarker(item map[string]types.AttributeValue) (intentMarker, error) {
	d := ddbitem.New(item)
	m := intentMarker{
		Key:        d.OptString(attrJobID),
		Tenant:     d.OptString(attrTenant),
		IntentID:   d.OptString(attrIntentID),
		JobID:      d.OptString(attrCreatedJobID),
		SpecSHA256: d.OptString(attrSpecSHA256),
		CreatedAt:  d.OptMillis(attrCreatedAt),
		ExpiresAt:  d.OptSeconds(attrExpiresAt),
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
		{attrStatus, str(string(p.status))},
		{attrGeneration, num(p.generation)},
		{attrVersion, num(p.version)},
		{attrOutbox, outboxValue(p.outbox)},
		{attrUpdatedAt, millis(p.updatedAt)},
	}
	if p.leaseOwner != nil {
		vals = append(vals, attrValue{attrLeaseOwner, str(*p.leaseOwner)})
	}
	if p.leaseExpiresAt != nil {
		vals = append(vals, attrValue{attrLeaseExpiresAt, millis(*p.leaseExpiresAt)})
	}
	if p.result != nil {
		vals = append(vals,
			attrValue{attrResultKey, str(p.result.Key)},
			attrValue{attrResultSHA256, str(p.result.SHA256)},
			attrValue{attrResultSize, num(p.result.Size)})
	}
	if p.progress != nil {
		vals = append(vals, attrValue{attrProgress, num(*p.progress)})
	}
	if p.failure != nil {
		vals = append(vals, attrValue{attrError, failureValue(*p.failure)})
	}
	if p.expiresAt != nil {
		vals = append(vals, attrValue{attrExpiresAt, seconds(*p.expiresAt)})
	}
	return vals
}

type attrValue struct {
	name  string
	value types.AttributeValue
}
