package jobitem

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/internal/base/ddbattr"
)

// The attributes of a job item: what FromStreamImage reads and pkg/jobs's
// store writes. The item layout is documented on Job and in
// docs/ARCHITECTURE.md; template.yaml's JobsTable declares the key
// (job_id) and the TTL attribute (expires_at). The store's indexes add
// attributes of their own, which follow from these and are not read.
const (
	AttrJobID          = "job_id"
	AttrIntentID       = "intent_id"
	AttrTenant         = "tenant"
	AttrStatus         = "status"
	AttrGeneration     = "generation"
	AttrVersion        = "version"
	AttrLeaseOwner     = "lease_owner"
	AttrLeaseExpiresAt = "lease_expires_at" // epoch milliseconds
	AttrResultKey      = "result_key"
	AttrResultSHA256   = "result_sha256"
	AttrResultSize     = "result_size"
	AttrProgress       = "progress"
	AttrOutbox         = "outbox" // a map of the message's attributes (OutboxAttr*)
	AttrSpec           = "spec"   // a map of strings
	AttrError          = "error"  // a map of the failure's attributes (FailureAttr*)
	AttrCreatedAt      = "created_at"
	AttrUpdatedAt      = "updated_at"
	AttrExpiresAt      = "expires_at" // epoch seconds: DynamoDB's TTL
	// The history's slots, "h0" to "h19" (HistorySlot), are attributes
	// too, and the PostgreSQL row holds them in its history column
	// (AttrHistory): history.go.
)

// The attributes of the maps in a job item: its outbox's message (a
// payload of no key is left out) and its failure.
const (
	OutboxAttrID       = "id"
	OutboxAttrType     = "type"
	OutboxAttrVersion  = "version"
	OutboxAttrPayload  = "payload"
	FailureAttrCode    = "code"
	FailureAttrMessage = "message"
)

// ErrNotJob is returned by FromStreamImage (and jobs.FromItem) for an item
// that is not a job: one whose key holds a '#', which no job id does (an
// intent marker, keyed IntentKeyPrefix…, and the record of the live
// index's shard count, "config#live-shards"), or no item at all (the
// missing new image of a stream record for a deleted item). A stream
// reader skips those. Any other item is a job's, and one without
// its key or status is malformed (an error naming the attribute), not
// skipped: the message in its outbox would be lost.
var ErrNotJob = errors.New("not a job item")

// IntentKeyPrefix begins the key of each intent marker, an item of the
// Jobs table that is not a job (pkg/jobs.IntentKey): no job id holds a
// '#' (ValidateID), so no job's key begins with it. The table's other item
// that is no job, pkg/jobs's record of the live index's shard count, is
// keyed "config#live-shards".
const IntentKeyPrefix = "intent#"

// FromStreamImage decodes an image of a Jobs table stream record, as Lambda
// delivers it (events.DynamoDBStreamRecord's NewImage or OldImage), into a
// Job; the Job carries the message its last transition emitted (Outbox).
// An item that is not a job is an error matching ErrNotJob; an attribute
// of the wrong type, or an unknown status, is an error naming it.
func FromStreamImage(image map[string]events.DynamoDBAttributeValue) (Job, error) {
	return Decode(ddbattr.Image(image))
}

// Decode decodes the job item d reads, in whichever form it reads items:
// the one decoder of the item, which FromStreamImage and pkg/jobs's
// FromItem (the SDK's form, internal/base/ddbitem) share, so the stores,
// the relay, the projector's recovery and the sweeper read items and
// images alike, with the same errors. Its decoder is this module's own
// (internal/base/ddbattr); outside the module, FromStreamImage and
// jobs.FromItem are the ways in.
func Decode[V any](d *ddbattr.Decoder[V]) (Job, error) {
	if d.Len() == 0 {
		return Job{}, fmt.Errorf("jobs: no item: %w", ErrNotJob)
	}
	if key := d.OptString(AttrJobID); strings.Contains(key, "#") {
		return Job{}, fmt.Errorf("jobs: item %q: %w", key, ErrNotJob)
	}
	j := Job{
		ID:             d.String(AttrJobID),
		IntentID:       d.OptString(AttrIntentID),
		Tenant:         d.OptString(AttrTenant),
		Status:         Status(d.String(AttrStatus)),
		Generation:     d.OptInt(AttrGeneration),
		Version:        d.OptInt(AttrVersion),
		LeaseOwner:     d.OptString(AttrLeaseOwner),
		LeaseExpiresAt: d.OptMillis(AttrLeaseExpiresAt),
		Result: Result{
			Key: d.OptString(AttrResultKey), SHA256: d.OptString(AttrResultSHA256), Size: d.OptInt(AttrResultSize),
		},
		Progress:  d.OptInt(AttrProgress),
		Spec:      d.OptStringMap(AttrSpec),
		CreatedAt: d.OptMillis(AttrCreatedAt),
		UpdatedAt: d.OptMillis(AttrUpdatedAt),
		ExpiresAt: d.OptSeconds(AttrExpiresAt),
	}
	if od, ok := d.OptMap(AttrOutbox); ok {
		j.Outbox = Message{ID: od.OptString(OutboxAttrID), Type: od.OptString(OutboxAttrType),
			Version: od.OptInt(OutboxAttrVersion), Payload: od.OptStringMap(OutboxAttrPayload)}
	}
	if ed, ok := d.OptMap(AttrError); ok {
		j.Error = Failure{Code: ed.OptString(FailureAttrCode), Message: ed.OptString(FailureAttrMessage)}
	}
	j.History = decodeHistory(d, j.Version)
	if err := d.Err(); err != nil {
		return j, fmt.Errorf("jobs: %w", err)
	}
	if j.ID == "" {
		// DynamoDB refuses an empty key: only a forged image has one.
		return j, fmt.Errorf("jobs: attribute %s: empty", AttrJobID)
	}
	switch j.Status {
	case StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled:
		return j, nil
	}
	return j, fmt.Errorf("jobs: job %q: attribute %s: unknown status %q", j.ID, AttrStatus, j.Status)
}
