package projection

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/internal/base/backoff"
	"github.com/fifoworker/fifoworker/internal/base/ddbitem"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// DynamoDBAPI is the part of the DynamoDB client DynamoStore calls:
// *dynamodb.Client implements it, and a test may pass a fake (which
// projectiontest.Run must then hold to the same behaviour as the tables).
type DynamoDBAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// Tables names the two tables of a DynamoStore.
type Tables struct {
	// Views has the hash key job_id (S): one item per job, its newest
	// snapshot.
	Views string
	// Totals has the hash key tenant (S) and the range key key (S). A
	// tenant's totals are spread over DynamoConfig.Shards partition-key
	// values "<tenant>#<k>" (k from 0; with one shard the key is the
	// tenant itself, the layout before sharding), each holding the item
	// "total" of its share of the counters and the items "cursor#<job_id>"
	// of the jobs whose id hashes to it (shardOf). The item ("#config",
	// "totals-shards") records the shard count (CheckShards).
	Totals string
}

// DynamoStore is the Store on the Views and Totals tables. Apply is one
// conditional UpdateItem of the view and, for an event that adds to the
// totals, one TransactWriteItems of the cursor (conditioned on its state)
// and the total of the job's shard, or one conditional UpdateItem of the
// cursor when it adds nothing to either counter (a failure, a
// cancellation); an event that adds nothing and is not final writes
// nothing more (Skipped). A refused cursor returns its old item
// (ReturnValuesOnConditionCheckFailure ALL_OLD), which tells a duplicate
// from a gap without another request. Recover is one consistent read of
// the cursor and one TransactWriteItems of view, cursor and total.
// Totals reads the tenant's shards with one consistent BatchGetItem per
// 100 of them: Shards read units a read.
type DynamoStore struct {
	api        DynamoDBAPI
	tables     Tables
	shards     int
	countEvery bool
}

var _ Store = (*DynamoStore)(nil)

// DynamoConfig configures a DynamoStore.
type DynamoConfig struct {
	// Client is the DynamoDB client. Required.
	Client DynamoDBAPI
	// Tables names the two tables, which must have the key schemas
	// documented on Tables. Required, both.
	Tables Tables
	// Shards is how many partition-key values each tenant's totals are
	// spread over: each takes DynamoDB's 1,000 write units a second, and
	// a job costs its shard 4 (see docs/CAPACITY.md), so a tenant can
	// count about 250 jobs a second per shard. 0 means DefaultShards
	// (32: 8,000 jobs a second); at most MaxShards. A job's cursor lives
	// in its shard, so the count is fixed for the table's life:
	// CheckShards records it and refuses another. 1 is the layout before
	// sharding (one item per tenant).
	Shards int
	// CountEveryEvent moves the cursor, in a transaction with the
	// shard's total, for every event, as the design before sharding did,
	// instead of skipping the events that add nothing. It exists to
	// measure the two designs' requests and writes side by side
	// (docs/BENCHMARKS.md); the gap check stays this design's, and the
	// totals are the same either way.
	CountEveryEvent bool
}

// The shard counts of DynamoConfig.Shards.
const (
	DefaultShards = 32
	MaxShards     = 256
)

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c DynamoConfig) Validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	case c.Tables.Views == "":
		return fmt.Errorf("%w: Tables.Views is empty", ErrInvalidConfig)
	case c.Tables.Totals == "":
		return fmt.Errorf("%w: Tables.Totals is empty", ErrInvalidConfig)
	case c.Shards < 0 || c.Shards > MaxShards:
		return fmt.Errorf("%w: Shards is %d; want 1 to %d (0: %d)", ErrInvalidConfig, c.Shards, MaxShards, DefaultShards)
	}
	return nil
}

// NewDynamoStore returns a store on cfg.Tables, or an error wrapping
// ErrInvalidConfig.
func NewDynamoStore(cfg DynamoConfig) (*DynamoStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	shards := cfg.Shards
	if shards == 0 {
		shards = DefaultShards
	}
	return &DynamoStore{api: cfg.Client, tables: cfg.Tables, shards: shards, countEvery: cfg.CountEveryEvent}, nil
}

// Attribute names. The Views table's items carry the snapshot; the Totals
// table's "total" item the counters, its cursor items a snapshot's version,
// progress and status.
const (
	attrJobID      = "job_id"
	attrTenant     = "tenant"
	attrKey        = "key"
	attrStatus     = "status"
	attrGeneration = "generation"
	attrVersion    = "version"
	attrProgress   = "progress"
	attrResultKey  = "result_key"
	attrResultSize = "result_size"
	attrErrorCode  = "error_code"
	attrUpdatedAt  = "updated_at"
	attrProcessed  = "processed"
	attrCompleted  = "completed"

	keyTotal     = "total"
	cursorPrefix = "cursor#"
)

// A transaction cancelled by a concurrent one (the jobs of a tenant's
// shard share its total item) is retried after a jittered wait: 10 ms doubled
// per round, at most 500 ms, at most maxRounds tries.
const (
	maxRounds    = 10
	conflictBase = 10 * time.Millisecond
	conflictMax  = 500 * time.Millisecond
)

// Apply implements Store: one UpdateItem of the view, then, unless the
// event adds nothing (Skipped), one TransactWriteItems of cursor and total
// or, when it adds to neither counter, one UpdateItem of the cursor. A
// cursor refused without its old item (none yet, or an endpoint that does
// not return it) costs one GetItem more.
func (s *DynamoStore) Apply(ctx context.Context, v View, delta int64) (Result, error) {
	if err := v.validate(); err != nil {
		return Result{}, applyError(&v, err)
	}
	if !s.countEvery && !adds(&v, delta) {
		return s.skip(ctx, &v, delta)
	}
	updated, err := s.putView(ctx, viewUpdate(s.tables.Views, &v, viewOlder))
	if err != nil {
		return Result{}, applyError(&v, err)
	}
	res := Result{ViewUpdated: updated}
	completed := completedOf(v.Status)
	move := s.cursorUpdate(&v, followed(v.Version, Cursor{Progress: v.Progress - delta}))
	items := []types.TransactWriteItem{move}
	if s.countEvery || delta != 0 || completed != 0 {
		items = append(items, s.totalAdd(v.Tenant, v.JobID, delta, completed))
	}
	for round := 1; round <= maxRounds; round++ {
		old, conflicted, err := s.write(ctx, items)
		switch {
		case err != nil:
			return res, applyError(&v, err)
		case conflicted:
			res.Conflicts++
			if err := backoff.Sleep(ctx, backoff.Delay(conflictBase, conflictMax, round)); err != nil {
				return res, applyError(&v, err)
			}
			continue
		case old == nil:
			res.Outcome, res.Cursor = Applied, v.Version
			return res, nil
		}
		cur, err := s.cursorOf(ctx, old.item, v.Tenant, v.JobID)
		if err != nil {
			return res, applyError(&v, err)
		}
		if out, err := judge(cur, &v, delta); err != nil || out != Applied {
			return s.judged(res, cur, &v, delta)
		}
		// Only a read after the refusal can find the cursor the event
		// follows: it moved in between. Try again.
	}
	return res, applyError(&v, errors.New("the totals kept changing; giving up"))
}

// skip writes the view of an event that adds nothing, on its version gate
// and unless the view is final (viewSkipped): one UpdateItem, whose refusal
// returns the view held (ReturnValuesOnConditionCheckFailure ALL_OLD). A
// view held final at an older version makes the event a mismatch
// (pastFinal), at the cost of a read of the cursor.
func (s *DynamoStore) skip(ctx context.Context, v *View, delta int64) (Result, error) {
	in := viewUpdate(s.tables.Views, v, viewSkipped).item()
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	_, err := s.api.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return Result{Outcome: Skipped, ViewUpdated: true}, nil
	case !errors.As(err, &ccf):
		return Result{}, applyError(v, err)
	}
	if len(ccf.Item) > 0 {
		held, err := decodeView(ccf.Item)
		if err != nil {
			return Result{}, applyError(v, err)
		}
		if pastFinal(&held, v) {
			cur, err := s.Cursor(ctx, v.Tenant, v.JobID)
			if err != nil {
				return Result{}, applyError(v, err)
			}
			return Result{}, skippedPastFinal(v, delta, cur)
		}
	}
	return Result{Outcome: Skipped}, nil
}

// refused is the old item of a cursor whose condition failed (nil item:
// none returned).
type refused struct {
	item map[string]types.AttributeValue
}

// write makes the cursor's move items[0], with the total items[1] if there
// is one, in a transaction, or alone as one UpdateItem. It returns the
// refused cursor when the move's condition failed, conflicted when a
// concurrent transaction cancelled it (to be retried), or an error.
func (s *DynamoStore) write(ctx context.Context, items []types.TransactWriteItem) (*refused, bool, error) {
	if len(items) == 1 {
		u := items[0].Update
		_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
			ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return &refused{item: ccf.Item}, false, nil
		}
		return nil, false, err
	}
	_, err := s.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil, false, nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != len(items) {
		return nil, false, err
	}
	switch reasons := tce.CancellationReasons; {
	case conditionFailed(reasons[0]):
		return &refused{item: reasons[0].Item}, false, nil
	case conflict(reasons...):
		return nil, true, nil
	}
	return nil, false, err
}

// judged is Apply's answer when the cursor cur refused v: the outcome
// judge gives, or its error.
func (s *DynamoStore) judged(res Result, cur Cursor, v *View, delta int64) (Result, error) {
	out, err := judge(cur, v, delta)
	if err != nil {
		return res, err
	}
	res.Outcome, res.Cursor = out, cur.Version
	return res, nil
}

// Recover implements Store: a consistent read of the cursor and one
// TransactWriteItems (view, cursor, total), or one conditional UpdateItem
// of the view when the cursor needs no change; when the view needs none,
// or the cursor moved since the read, one round more.
func (s *DynamoStore) Recover(ctx context.Context, snap View) (Recovery, error) {
	if err := snap.validate(); err != nil {
		return Recovery{}, recoverError(&snap, err)
	}
	withView := true
	conflicts := 0
	for round := 1; round <= maxRounds; round++ {
		from, err := s.Cursor(ctx, snap.Tenant, snap.JobID)
		if err != nil {
			return Recovery{}, recoverError(&snap, err)
		}
		r := planRecovery(from, &snap)
		r.Conflicts = conflicts
		if !r.Moved() {
			// The totals are there already; the view takes the snapshot
			// if viewTakes says so.
			if r.ViewUpdated, err = s.putView(ctx, viewUpdate(s.tables.Views, &snap, viewRecover)); err != nil {
				return Recovery{}, recoverError(&snap, err)
			}
			return r, nil
		}
		var items []types.TransactWriteItem
		if withView {
			items = append(items, types.TransactWriteItem{Update: viewUpdate(s.tables.Views, &snap, viewRewrite).transact()})
		}
		items = append(items, s.cursorUpdate(&snap, is(from)), s.totalAdd(snap.Tenant, snap.JobID, r.Processed, r.Completed))
		_, err = s.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			r.ViewUpdated = withView
			return r, nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) || len(tce.CancellationReasons) != len(items) {
			return Recovery{}, recoverError(&snap, err)
		}
		reasons := tce.CancellationReasons
		viewInStep := withView && conditionFailed(reasons[0])
		if withView {
			reasons = reasons[1:]
		}
		switch {
		case viewInStep || conditionFailed(reasons[0]):
			// The view needs no change (leave it out), or the cursor moved
			// since it was read (read it again).
			withView = withView && !viewInStep
		case conflict(tce.CancellationReasons...):
			conflicts++
			if err := backoff.Sleep(ctx, backoff.Delay(conflictBase, conflictMax, round)); err != nil {
				return Recovery{}, recoverError(&snap, err)
			}
		default:
			return Recovery{}, recoverError(&snap, err)
		}
	}
	return Recovery{}, recoverError(&snap, errors.New("the cursor kept changing; giving up"))
}

// View implements Store with a strongly consistent read.
func (s *DynamoStore) View(ctx context.Context, jobID string) (View, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.Views),
		Key:            map[string]types.AttributeValue{attrJobID: str(jobID)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return View{}, fmt.Errorf("projection: view %s: %w", jobID, err)
	}
	if len(out.Item) == 0 {
		return View{}, fmt.Errorf("projection: view %s: %w", jobID, ErrNotFound)
	}
	v, err := decodeView(out.Item)
	if err != nil {
		return View{}, fmt.Errorf("projection: view %s: %w", jobID, err)
	}
	return v, nil
}

// Totals implements Store: the sum of the tenant's shards, read strongly
// consistent, one GetItem for one shard, else one BatchGetItem per 100.
func (s *DynamoStore) Totals(ctx context.Context, tenant string) (Totals, error) {
	if err := validateTenant(tenant); err != nil {
		return Totals{}, fmt.Errorf("projection: totals: %w", err)
	}
	items, err := s.shardTotals(ctx, tenant)
	if err != nil {
		return Totals{}, fmt.Errorf("projection: totals of %s: %w", tenant, err)
	}
	t := Totals{Tenant: tenant}
	for _, item := range items {
		d := ddbitem.New(item)
		t.Processed += d.OptInt(attrProcessed)
		t.Completed += d.OptInt(attrCompleted)
		if err := decodeErr(d); err != nil {
			return Totals{}, fmt.Errorf("projection: totals of %s: %w", tenant, err)
		}
	}
	return t, nil
}

// shardTotals reads the total item of each of the tenant's shards that has
// one.
func (s *DynamoStore) shardTotals(ctx context.Context, tenant string) ([]map[string]types.AttributeValue, error) {
	if s.shards == 1 {
		item, err := s.getTotals(ctx, totalsKey(tenant, keyTotal))
		return []map[string]types.AttributeValue{item}, err
	}
	var keys []map[string]types.AttributeValue
	for k := range s.shards {
		keys = append(keys, totalsKey(shardKey(tenant, k), keyTotal))
	}
	var items []map[string]types.AttributeValue
	for chunk := range slices.Chunk(keys, maxBatchGet) {
		pending := map[string]types.KeysAndAttributes{s.tables.Totals: {Keys: chunk, ConsistentRead: aws.Bool(true)}}
		for round := 1; len(pending) > 0; round++ {
			if round > maxRounds {
				return nil, errors.New("BatchGetItem kept leaving keys unprocessed")
			}
			if round > 1 {
				if err := backoff.Sleep(ctx, backoff.Delay(conflictBase, conflictMax, round-1)); err != nil {
					return nil, err
				}
			}
			out, err := s.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, err
			}
			items = append(items, out.Responses[s.tables.Totals]...)
			pending = out.UnprocessedKeys
		}
	}
	return items, nil
}

// maxBatchGet is BatchGetItem's most keys a call.
const maxBatchGet = 100

// Cursor implements Store with a strongly consistent read.
func (s *DynamoStore) Cursor(ctx context.Context, tenant, jobID string) (Cursor, error) {
	item, err := s.getTotals(ctx, s.cursorKey(tenant, jobID))
	if err != nil {
		return Cursor{}, fmt.Errorf("projection: cursor of %s: %w", jobID, err)
	}
	c, err := decodeCursor(item)
	if err != nil {
		return Cursor{}, fmt.Errorf("projection: cursor of %s: %w", jobID, err)
	}
	return c, nil
}

func (s *DynamoStore) getTotals(ctx context.Context, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.Totals),
		Key:            key,
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// cursorOf decodes the cursor a cancelled transaction returned, or reads it
// when the reason carries none: the cursor does not exist, or the endpoint
// ignores ReturnValuesOnConditionCheckFailure.
func (s *DynamoStore) cursorOf(ctx context.Context, old map[string]types.AttributeValue, tenant, jobID string) (Cursor, error) {
	if len(old) > 0 {
		return decodeCursor(old)
	}
	return s.Cursor(ctx, tenant, jobID)
}

// putView makes the conditional view update u and reports whether its
// condition held.
func (s *DynamoStore) putView(ctx context.Context, u *update) (bool, error) {
	_, err := s.api.UpdateItem(ctx, u.item())
	if err == nil {
		return true, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	return false, err
}

// cursorCond is the condition on a job's cursor item a write of it makes.
type cursorCond struct {
	at     Cursor
	before int64 // the event's version: the cursor any version before it, at at's progress and a status that is not final; 0: exactly at
}

// followed is the condition that the cursor is one the event of version
// v whose state starts from from's progress follows (follows): behind v,
// at that progress, its status not final; or, from progress 0, no cursor
// at all (the zero Cursor).
func followed(v int64, from Cursor) cursorCond { return cursorCond{at: from, before: v} }

// is is the condition that the cursor is exactly c (none, for the zero
// Cursor).
func is(c Cursor) cursorCond { return cursorCond{at: c} }

// cursorUpdate moves the job's cursor to v, on condition cond. A refusal
// returns the cursor as it was.
func (s *DynamoStore) cursorUpdate(v *View, cond cursorCond) types.TransactWriteItem {
	u := &update{
		table: s.tables.Totals,
		key:   s.cursorKey(v.Tenant, v.JobID),
		expr:  "SET #job_id = :job_id, #version = :version, #progress = :progress, #status = :status",
		names: map[string]string{
			"#job_id": attrJobID, "#version": attrVersion, "#progress": attrProgress, "#status": attrStatus,
		},
		values: map[string]types.AttributeValue{
			":job_id": str(v.JobID), ":version": num(v.Version), ":progress": num(v.Progress), ":status": str(string(v.Status)),
		},
	}
	switch c := cond.at; {
	case cond.before > 0:
		u.cond = "#version < :version AND #progress = :prev_progress AND NOT (#status IN (:completed, :failed, :cancelled))"
		if c.Progress == 0 {
			u.cond = "attribute_not_exists(#version) OR (" + u.cond + ")"
		}
		u.values[":prev_progress"] = num(c.Progress)
		u.values[":completed"], u.values[":failed"] = str(string(jobs.StatusCompleted)), str(string(jobs.StatusFailed))
		u.values[":cancelled"] = str(string(jobs.StatusCancelled))
	case c.Version == 0:
		u.cond = "attribute_not_exists(#version)"
	default:
		u.cond = "#version = :prev AND #progress = :prev_progress AND #status = :prev_status"
		u.values[":prev"], u.values[":prev_progress"], u.values[":prev_status"] = num(c.Version), num(c.Progress), str(string(c.Status))
	}
	t := u.transact()
	t.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	return types.TransactWriteItem{Update: t}
}

// totalAdd adds to the counters of the tenant's shard that holds jobID,
// creating the item if needed.
func (s *DynamoStore) totalAdd(tenant, jobID string, processed, completed int64) types.TransactWriteItem {
	u := &update{
		table:  s.tables.Totals,
		key:    totalsKey(s.partition(tenant, jobID), keyTotal),
		expr:   "ADD #processed :processed, #completed :completed",
		names:  map[string]string{"#processed": attrProcessed, "#completed": attrCompleted},
		values: map[string]types.AttributeValue{":processed": num(processed), ":completed": num(completed)},
	}
	return types.TransactWriteItem{Update: u.transact()}
}

// viewCond says when a view update writes.
type viewCond int

const (
	// viewOlder: an event's; the view holds an older version, or none
	// (viewNewer).
	viewOlder viewCond = iota
	// viewRecover: a recovery's that leaves the cursor as it is; the view
	// is not the snapshot and viewTakes says it takes it.
	viewRecover
	// viewRewrite: a recovery's, in the transaction that moves the cursor
	// (viewTakes with rewrite): the view holds no newer version than a
	// live snapshot; a final snapshot always.
	viewRewrite
	// viewSkipped: a skipped event's: viewOlder, and the view held is not
	// final (pastFinal).
	viewSkipped
)

// viewUpdate writes the snapshot v into its view on condition cond. The
// optional attributes v lacks are removed, so the item is exactly the
// snapshot.
func viewUpdate(table string, v *View, cond viewCond) *update {
	u := &update{
		table: table,
		key:   map[string]types.AttributeValue{attrJobID: str(v.JobID)},
		names: map[string]string{
			"#tenant": attrTenant, "#status": attrStatus, "#generation": attrGeneration, "#version": attrVersion,
			"#progress": attrProgress, "#updated_at": attrUpdatedAt,
			"#result_key": attrResultKey, "#result_size": attrResultSize, "#error_code": attrErrorCode,
		},
		values: map[string]types.AttributeValue{
			":tenant": str(v.Tenant), ":status": str(string(v.Status)), ":generation": num(v.Generation),
			":version": num(v.Version), ":progress": num(v.Progress),
		},
	}
	set := "SET #tenant = :tenant, #status = :status, #generation = :generation, #version = :version, #progress = :progress"
	var remove []string
	differs := []string{"#tenant <> :tenant", "#status <> :status", "#generation <> :generation", "#progress <> :progress"}
	for _, o := range optionalAttrs(v) {
		placeholder := "#" + o.name
		if o.value == nil {
			remove = append(remove, placeholder)
			differs = append(differs, "attribute_exists("+placeholder+")")
			continue
		}
		set += ", " + placeholder + " = :" + o.name
		u.values[":"+o.name] = o.value
		differs = append(differs, "attribute_not_exists("+placeholder+") OR "+placeholder+" <> :"+o.name)
	}
	u.expr = set
	if len(remove) > 0 {
		u.expr += " REMOVE " + strings.Join(remove, ", ")
	}
	other := strings.Join(differs, " OR ")
	switch final := v.Status.Final(); {
	case cond == viewRewrite && final:
		u.cond = ""
	case cond == viewRewrite:
		u.cond = "attribute_not_exists(#version) OR #version <= :version"
	case cond == viewRecover && final:
		u.cond = "attribute_not_exists(#version) OR #version <> :version OR " + other
	case cond == viewRecover:
		u.cond = "attribute_not_exists(#version) OR #version < :version OR (#version = :version AND (" + other + "))"
	case cond == viewSkipped:
		u.cond = "attribute_not_exists(#version) OR (#version < :version AND NOT (#status IN (:completed, :failed, :cancelled)))"
		u.values[":completed"], u.values[":failed"] = str(string(jobs.StatusCompleted)), str(string(jobs.StatusFailed))
		u.values[":cancelled"] = str(string(jobs.StatusCancelled))
	default:
		u.cond = "attribute_not_exists(#version) OR #version < :version"
	}
	return u
}

// optional is an optional attribute of a view item and its value in a
// snapshot; nil when the snapshot has none.
type optional struct {
	name  string
	value types.AttributeValue
}

func optionalAttrs(v *View) []optional {
	o := []optional{{name: attrUpdatedAt}, {name: attrResultKey}, {name: attrResultSize}, {name: attrErrorCode}}
	if !v.UpdatedAt.IsZero() {
		o[0].value = num(v.UpdatedAt.UnixMilli())
	}
	if v.ResultKey != "" {
		o[1].value = str(v.ResultKey)
	}
	if v.ResultSize != 0 {
		o[2].value = num(v.ResultSize)
	}
	if v.ErrorCode != "" {
		o[3].value = str(v.ErrorCode)
	}
	return o
}

// update is one conditional UpdateItem, alone or in a transaction.
type update struct {
	table  string
	key    map[string]types.AttributeValue
	expr   string
	cond   string
	names  map[string]string
	values map[string]types.AttributeValue
}

func (u *update) item() *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName: aws.String(u.table), Key: u.key,
		UpdateExpression: aws.String(u.expr), ConditionExpression: aws.String(u.cond),
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values,
	}
}

func (u *update) transact() *types.Update {
	t := &types.Update{
		TableName: aws.String(u.table), Key: u.key,
		UpdateExpression:         aws.String(u.expr),
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values,
	}
	if u.cond != "" {
		t.ConditionExpression = aws.String(u.cond)
	}
	return t
}

func totalsKey(partition, key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrTenant: str(partition), attrKey: str(key)}
}

// cursorKey is the key of the job's cursor item, in the job's shard.
func (s *DynamoStore) cursorKey(tenant, jobID string) map[string]types.AttributeValue {
	return totalsKey(s.partition(tenant, jobID), cursorPrefix+jobID)
}

// partition is the partition-key value of the tenant's shard that holds
// the job's cursor and its share of the totals: the tenant itself with one
// shard, else "<tenant>#<shardOf(jobID)>". With more than one shard every
// value ends in "#<digits>", so no tenant's can be another's.
func (s *DynamoStore) partition(tenant, jobID string) string {
	if s.shards == 1 {
		return tenant
	}
	return shardKey(tenant, shardOf(jobID, s.shards))
}

func shardKey(tenant string, k int) string { return tenant + "#" + strconv.Itoa(k) }

// shardOf is the shard of n that holds the job: FNV-1a (32 bits) of its id
// modulo n. It is part of the stored layout: changing it moves cursors.
func shardOf(jobID string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(jobID)) // a hash's Write never fails
	return int(h.Sum32() % uint32(n))
}

func conditionFailed(r types.CancellationReason) bool {
	return aws.ToString(r.Code) == "ConditionalCheckFailed"
}

func conflict(reasons ...types.CancellationReason) bool {
	for _, r := range reasons {
		if aws.ToString(r.Code) == "TransactionConflict" {
			return true
		}
	}
	return false
}

func decodeView(item map[string]types.AttributeValue) (View, error) {
	d := ddbitem.New(item)
	v := View{
		JobID:      d.String(attrJobID),
		Tenant:     d.String(attrTenant),
		Status:     jobs.Status(d.String(attrStatus)),
		Generation: d.Int(attrGeneration),
		Version:    d.Int(attrVersion),
		Progress:   d.Int(attrProgress),
		ResultKey:  d.OptString(attrResultKey),
		ResultSize: d.OptInt(attrResultSize),
		ErrorCode:  d.OptString(attrErrorCode),
		UpdatedAt:  d.OptMillis(attrUpdatedAt),
	}
	return v, decodeErr(d)
}

// decodeCursor decodes a cursor item; no item is the zero Cursor.
func decodeCursor(item map[string]types.AttributeValue) (Cursor, error) {
	if len(item) == 0 {
		return Cursor{}, nil
	}
	d := ddbitem.New(item)
	c := Cursor{
		Version:  d.Int(attrVersion),
		Progress: d.Int(attrProgress),
		Status:   jobs.Status(d.String(attrStatus)),
	}
	return c, decodeErr(d)
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: itoa(n)}
}
