package jobs

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

// decoder reads attributes and remembers the first problem.
type decoder struct {
	item map[string]types.AttributeValue
	path string // where item is: "" for the item itself, "outbox." for its outbox
	err  error
}

func (d *decoder) fail(name, want string) {
	if d.err == nil {
		d.err = fmt.Errorf("jobs: attribute %s%s: want %s, have %s", d.path, name, want, typeName(d.item[name]))
	}
}

// typeName is DynamoDB's name of av's type.
func typeName(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return fmt.Sprintf("N %s", v.Value)
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberM:
		return "M"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	}
	return fmt.Sprintf("%T", av)
}

func (d *decoder) str(name string) string {
	av, ok := d.item[name]
	if !ok {
		return ""
	}
	s, ok := av.(*types.AttributeValueMemberS)
	if !ok {
		d.fail(name, "S")
		return ""
	}
	return s.Value
}

func (d *decoder) num(name string) int64 {
	av, ok := d.item[name]
	if !ok {
		return 0
	}
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		d.fail(name, "N")
		return 0
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		d.fail(name, "an integer N")
	}
	return v
}

func (d *decoder) millis(name string) time.Time {
	if _, ok := d.item[name]; !ok {
		return time.Time{}
	}
	return time.UnixMilli(d.num(name)).UTC()
}

func (d *decoder) seconds(name string) time.Time {
	if _, ok := d.item[name]; !ok {
		return time.Time{}
	}
	return time.Unix(d.num(name), 0).UTC()
}

// sub decodes a map attribute with another decoder; ok is false when the
// attribute is absent.
func (d *decoder) sub(name string) (*decoder, bool) {
	av, ok := d.item[name]
	if !ok {
		return nil, false
	}
	m, ok := av.(*types.AttributeValueMemberM)
	if !ok {
		d.fail(name, "M")
		return nil, false
	}
	return &decoder{item: m.Value, path: d.path + name + "."}, true
}

func (d *decoder) strMap(name string) map[string]string {
	sd, ok := d.sub(name)
	if !ok || len(sd.item) == 0 {
		return nil
	}
	out := make(map[string]string, len(sd.item))
	for k := range sd.item {
		out[k] = sd.str(k)
	}
	d.adopt(sd)
	return out
}

func (d *decoder) adopt(sd *decoder) {
	if sd.err != nil && d.err == nil {
		d.err = sd.err
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
	d := &decoder{item: item}
	j := Job{
		ID:             d.str(attrJobID),
		IntentID:       d.str(attrIntentID),
		Tenant:         d.str(attrTenant),
		Status:         Status(d.str(attrStatus)),
		Generation:     d.num(attrGeneration),
		Version:        d.num(attrVersion),
		LeaseOwner:     d.str(attrLeaseOwner),
		LeaseExpiresAt: d.millis(attrLeaseExpiresAt),
		Result: Result{
			Key: d.str(attrResultKey), SHA256: d.str(attrResultSHA256), Size: d.num(attrResultSize),
		},
		Progress:  d.num(attrProgress),
		Spec:      d.strMap(attrSpec),
		CreatedAt: d.millis(attrCreatedAt),
		UpdatedAt: d.millis(attrUpdatedAt),
		ExpiresAt: d.seconds(attrExpiresAt),
	}
	if od, ok := d.sub(attrOutbox); ok {
		j.Outbox = Message{ID: od.str("id"), Type: od.str("type"), Version: od.num("version"), Payload: od.strMap("payload")}
		d.adopt(od)
	}
	if ed, ok := d.sub(attrError); ok {
		j.Error = Failure{Code: ed.str("code"), Message: ed.str("message")}
		d.adopt(ed)
	}
	if d.err == nil {
		switch j.Status {
		case "":
			d.err = fmt.Errorf("jobs: item %q: %w", j.ID, ErrNotJob)
		case StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled:
			if j.ID == "" {
				d.err = fmt.Errorf("jobs: item without %s: %w", attrJobID, ErrNotJob)
			}
		default:
			d.err = fmt.Errorf("jobs: job %q: attribute %s: unknown status %q", j.ID, attrStatus, j.Status)
		}
	}
	return j, d.err
}

func decodeMarker(item map[string]types.AttributeValue) (intentMarker, error) {
	d := &decoder{item: item}
	m := intentMarker{
		Key:        d.str(attrJobID),
		Tenant:     d.str(attrTenant),
		IntentID:   d.str(attrIntentID),
		JobID:      d.str(attrCreatedJobID),
		SpecSHA256: d.str(attrSpecSHA256),
		CreatedAt:  d.millis(attrCreatedAt),
		ExpiresAt:  d.seconds(attrExpiresAt),
	}
	if d.err == nil && m.JobID == "" {
		d.err = fmt.Errorf("jobs: item %q is not an intent marker", m.Key)
	}
	return m, d.err
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
