package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/internal/base/backoff"
	"github.com/fifoworker/fifoworker/internal/base/ddbitem"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// DynamoDBAPI is the part of the DynamoDB client DynamoStore calls:
// *dynamodb.Client implements it, and a test may pass a fake (which
// jobstest.Run must then hold to the same behaviour as the real table).
type DynamoDBAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// DynamoStore is the Store on the Jobs table. Every transition after
// creation is one conditional UpdateItem that also writes the outbox
// message; a refused write returns the old item
// (ReturnValuesOnConditionCheckFailure ALL_OLD), from which the shared state
// machine tells the error, or recognises the caller's own earlier write,
// without another request.
type DynamoStore struct {
	api    DynamoDBAPI
	table  string
	cfg    config
	shards int
	record liveShardsRecord
}

var _ Store = (*DynamoStore)(nil)

// DynamoConfig configures a DynamoStore.
type DynamoConfig struct {
	// Client is the DynamoDB client. Required.
	Client DynamoDBAPI
	// Table is the name of a table with the key schema of template.yaml's
	// JobsTable (hash key job_id, S). Required.
	Table string
	// LiveShards is how many shards the live and finished indexes' hash
	// keys take (LiveShardOf): jobs are written to one of them and the
	// listings walk them all. Default LiveShards (16), at least
	// MinLiveShards and at most MaxLiveShards; it may only grow over a
	// table's life (see CheckLiveShards).
	LiveShards int
	// Config holds the settings the store shares with a MemoryStore; its
	// zero value is the defaults.
	Config
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c DynamoConfig) Validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	case c.Table == "":
		return fmt.Errorf("%w: Table is empty", ErrInvalidConfig)
	case c.LiveShards != 0 && (c.LiveShards < MinLiveShards || c.LiveShards > MaxLiveShards):
		return fmt.Errorf("%w: LiveShards %d is outside %d to %d", ErrInvalidConfig, c.LiveShards, MinLiveShards, MaxLiveShards)
	}
	return c.Config.Validate()
}

// NewDynamoStore returns a store on cfg.Table, or an error wrapping
// ErrInvalidConfig.
func NewDynamoStore(cfg DynamoConfig) (*DynamoStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	return &DynamoStore{api: cfg.Client, table: cfg.Table, cfg: c, shards: cmp.Or(cfg.LiveShards, LiveShards)}, nil
}

// maxRounds bounds the writes of one transition. A fenced write needs one;
// a claim or a cancel that finds the item elsewhere than expected needs a
// second, and a third only when it lost a race in between.
const maxRounds = 8

// The wait before Create's next round after a conflicting transaction:
// 10 ms doubled per round, jittered, at most a second.
const (
	createRetryBase = 10 * time.Millisecond
	createRetryMax  = time.Second
)

// errConditionFailed marks a write refused by its condition.
var errConditionFailed = errors.New("condition failed")

// Claim implements Store. From pending it costs one request; a takeover
// costs two (the first write learns the expired lease from the old item).
func (s *DynamoStore) Claim(ctx context.Context, req ClaimRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Renew implements Store: one request.
func (s *DynamoStore) Renew(ctx context.Context, req RenewRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Accept implements Store: one request.
func (s *DynamoStore) Accept(ctx context.Context, req AcceptRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Fail implements Store: one request.
func (s *DynamoStore) Fail(ctx context.Context, req FailRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Cancel implements Store: one request for a pending job, two for a
// running one.
func (s *DynamoStore) Cancel(ctx context.Context, req CancelRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Nudge implements Store: one request. (A refusal is typed from the old
// item the refused write returns.)
func (s *DynamoStore) Nudge(ctx context.Context, req NudgeRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Live implements Lister: LiveAfter from the start, without reading the
// rest of a shard's last millisecond (the sweeper takes any limit jobs of
// the oldest, and finds the others on its next run).
func (s *DynamoStore) Live(ctx context.Context, updatedBefore time.Time, limit int) ([]string, error) {
	return liveIDs(s.live(ctx, LivePosition{}, updatedBefore, limit, false))
}

// LiveAfter implements LivePager: one Query of the live index per shard
// and page, the shards at most maxInFlight at a time. Each shard is read oldest first until it has given limit jobs
// after the position and every other job of the last one's millisecond
// (the index orders a shard's jobs of one millisecond in no set way), or
// has no more before the cutoff; the shards' lists are merged and cut to
// limit. The index projects the keys only (job_id, live_shard,
// updated_at), which is all a listing returns.
func (s *DynamoStore) LiveAfter(ctx context.Context, after LivePosition, updatedBefore time.Time, limit int) ([]LivePosition, error) {
	return s.live(ctx, after, updatedBefore, limit, true)
}

func (s *DynamoStore) live(ctx context.Context, after LivePosition, updatedBefore time.Time, limit int, exact bool) ([]LivePosition, error) {
	if err := validateLimit(limit); err != nil {
		return nil, err
	}
	last := updatedBefore.UnixMilli() - 1
	if after.UpdatedAt > last {
		return nil, nil // DynamoDB refuses a BETWEEN whose bounds are reversed
	}
	shards, err := fanOut(ctx, s.shards, func(ctx context.Context, shard int) ([]LivePosition, error) {
		got, err := s.liveShard(ctx, strconv.Itoa(shard), after, last, limit, exact)
		if err != nil {
			return nil, fmt.Errorf("jobs: live: shard %d: %w", shard, err)
		}
		return got, nil
	})
	if err != nil {
		return nil, err
	}
	return oldest(slices.Concat(shards...), after, limit), nil
}

func (s *DynamoStore) liveShard(ctx context.Context, shard string, after LivePosition, last int64, limit int, exact bool) ([]LivePosition, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		IndexName:                aws.String(LiveIndex),
		KeyConditionExpression:   aws.String("#s = :s AND #u < :u"),
		ExpressionAttributeNames: map[string]string{"#s": attrLiveShard, "#u": jobitem.AttrUpdatedAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": str(shard), ":u": num(last + 1),
		},
		ScanIndexForward: aws.Bool(true), // oldest first
	}
	if after != (LivePosition{}) {
		in.KeyConditionExpression = aws.String("#s = :s AND #u BETWEEN :lo AND :hi")
		delete(in.ExpressionAttributeValues, ":u")
		in.ExpressionAttributeValues[":lo"], in.ExpressionAttributeValues[":hi"] = num(after.UpdatedAt), num(last)
	}
	var out []LivePosition
	full := func() bool { return len(out) >= limit }
	for !full() || exact {
		n := limit - len(out)
		switch {
		case full():
			n = 100 // the rest of the last millisecond
		case exact:
			// One more, to see whether the last millisecond goes on: most
			// often it does not, and the shard needs no second request.
			n = min(n, math.MaxInt32-1) + 1
		}
		in.Limit = aws.Int32(int32(min(n, math.MaxInt32)))
		page, err := s.api.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			d := ddbitem.New(item)
			p := LivePosition{ID: d.OptString(jobitem.AttrJobID), UpdatedAt: d.OptInt(jobitem.AttrUpdatedAt)}
			if err := d.Err(); err != nil {
				return nil, fmt.Errorf("jobs: %w", err)
			}
			if full() && p.UpdatedAt > out[len(out)-1].UpdatedAt {
				return out, nil // past the last millisecond the shard gives
			}
			if p.compare(after) > 0 {
				out = append(out, p)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	return out, nil
}

// maxBatchGet is the most keys one BatchGetItem takes.
const maxBatchGet = 100

// The wait before asking again for keys a BatchGetItem left unprocessed
// (throttling, or a response over 16 MB): 50 ms doubled per round,
// jittered, at most a second.
const (
	batchRetryBase = 50 * time.Millisecond
	batchRetryMax  = time.Second
)

// GetMany implements BatchGetter: one strongly consistent BatchGetItem per
// 100 ids, the chunks at most maxInFlight at a time (the first error
// cancels the others), and one more for any keys DynamoDB left unprocessed, after a
// backoff, at most maxRounds in all per 100. Items that do not decode are
// collected into an *UndecodableError, returned with the others.
func (s *DynamoStore) GetMany(ctx context.Context, ids []string) (map[string]Job, error) {
	return s.getMany(ctx, ids, types.KeysAndAttributes{ConsistentRead: aws.Bool(true)})
}

// GetStatuses implements StatusReader: GetMany's requests, each projected
// on the job's id and status. A projection costs the read units of the
// whole item (DynamoDB counts an item's size, not what it returns: the
// developer guide's "Using projection expressions"), but the answer is a
// few bytes a job instead of up to 1 KB, to send and to decode.
func (s *DynamoStore) GetStatuses(ctx context.Context, ids []string) (map[string]Status, error) {
	got, err := s.getMany(ctx, ids, types.KeysAndAttributes{
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#id, #st"),
		ExpressionAttributeNames: map[string]string{"#id": jobitem.AttrJobID, "#st": jobitem.AttrStatus}, // status is a reserved word
	})
	return statuses(got, err)
}

// getMany is GetMany with each request's settings but its keys from ask.
func (s *DynamoStore) getMany(ctx context.Context, ids []string, ask types.KeysAndAttributes) (map[string]Job, error) {
	unique, err := uniqueIDs(ids)
	if err != nil {
		return nil, err
	}
	chunks := slices.Collect(slices.Chunk(unique, maxBatchGet))
	reads, err := fanOut(ctx, len(chunks), func(ctx context.Context, i int) (batchRead, error) {
		keys := make([]map[string]types.AttributeValue, 0, len(chunks[i]))
		for _, id := range chunks[i] {
			keys = append(keys, map[string]types.AttributeValue{jobitem.AttrJobID: str(id)})
		}
		r := batchRead{jobs: map[string]Job{}, bad: map[string]error{}}
		req := ask
		req.Keys = keys
		if err := s.batchGet(ctx, req, r.jobs, r.bad); err != nil {
			return r, fmt.Errorf("jobs: get many: ids %d to %d: %w", i*maxBatchGet, i*maxBatchGet+len(chunks[i])-1, err)
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]Job, len(unique))
	bad := map[string]error{}
	for _, r := range reads { // the ids are unique: no chunk overwrites another's
		maps.Copy(out, r.jobs)
		maps.Copy(bad, r.bad)
	}
	if len(bad) > 0 {
		return out, &UndecodableError{Items: bad}
	}
	return out, nil
}

// batchRead is one chunk's part of GetMany's answer.
type batchRead struct {
	jobs map[string]Job
	bad  map[string]error
}

// batchGet reads req's keys into into, and the errors of the items that do
// not decode into bad, by job id.
func (s *DynamoStore) batchGet(ctx context.Context, req types.KeysAndAttributes, into map[string]Job, bad map[string]error) error {
	for round := 1; ; round++ {
		res, err := s.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{s.table: req}})
		if err != nil {
			return err
		}
		for _, item := range res.Responses[s.table] {
			j, err := FromItem(item)
			if err != nil {
				// The key is the one attribute every item has, as a string.
				id, _ := item[jobitem.AttrJobID].(*types.AttributeValueMemberS)
				if id == nil {
					return err
				}
				bad[id.Value] = err
				continue
			}
			into[j.ID] = j
		}
		req.Keys = res.UnprocessedKeys[s.table].Keys
		if len(req.Keys) == 0 {
			return nil
		}
		if round == maxRounds {
			return fmt.Errorf("%d keys still unprocessed after %d requests", len(req.Keys), round)
		}
		if err := backoff.Sleep(ctx, backoff.Delay(batchRetryBase, batchRetryMax, round)); err != nil {
			return err
		}
	}
}

// Get implements Store with a strongly consistent read.
func (s *DynamoStore) Get(ctx context.Context, id string) (Job, error) {
	if err := ValidateID(id); err != nil {
		return Job{}, fmt.Errorf("jobs: get: %w", err)
	}
	item, err := s.get(ctx, id)
	if err != nil {
		return Job{}, fmt.Errorf("jobs: get %s: %w", id, err)
	}
	if item == nil {
		return Job{}, fmt.Errorf("jobs: get %s: %w", id, ErrNotFound)
	}
	j, err := FromItem(item)
	if err != nil {
		return Job{}, fmt.Errorf("jobs: get %s: %w", id, err)
	}
	return j, nil
}

func (s *DynamoStore) get(ctx context.Context, key string) (map[string]types.AttributeValue, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            map[string]types.AttributeValue{jobitem.AttrJobID: str(key)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

func (s *DynamoStore) getJob(ctx context.Context, id string) (*Job, error) {
	item, err := s.get(ctx, id)
	if err != nil || item == nil {
		return nil, err
	}
	j, err := FromItem(item)
	if err != nil {
		return nil, err
	}
	return &j, nil
}

func (s *DynamoStore) transition(ctx context.Context, req request) (Job, error) {
	return runRounds(req, &s.cfg, func(st *step, _ time.Time) (Job, *Job, error) {
		return s.update(ctx, req.jobID(), st)
	}, func(old *Job) error {
		// The table and guard.holds disagree: a bug, never a retry.
		return fmt.Errorf("DynamoDB refused a condition the item satisfies (g%d v%d %s)",
			old.Generation, old.Version, old.Status)
	})
}

// update makes the write of st. When the condition fails it returns
// errConditionFailed and the item as it was (nil if there is none).
func (s *DynamoStore) update(ctx context.Context, id string, st *step) (Job, *Job, error) {
	if err := s.recordLiveShards(ctx); err != nil {
		return Job{}, nil, err
	}
	out, err := s.api.UpdateItem(ctx, updateInput(s.table, id, s.shards, st))
	if err == nil {
		j, err := FromItem(out.Attributes)
		return j, nil, err
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return Job{}, nil, err
	}
	if len(ccf.Item) > 0 {
		old, err := FromItem(ccf.Item)
		if err != nil {
			return Job{}, nil, err
		}
		return Job{}, &old, errConditionFailed
	}
	// No old item: there is none, or the endpoint ignores
	// ReturnValuesOnConditionCheckFailure. A consistent read tells.
	old, err := s.getJob(ctx, id)
	if err != nil {
		return Job{}, nil, err
	}
	return Job{}, old, errConditionFailed
}

// expression collects placeholders for an expression.
type expression struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func (e *expression) name(attr string) string {
	for k, v := range e.names {
		if v == attr {
			return k
		}
	}
	k := "#n" + strconv.Itoa(len(e.names))
	e.names[k] = attr
	return k
}

func (e *expression) value(av types.AttributeValue) string {
	k := ":v" + strconv.Itoa(len(e.values))
	e.values[k] = av
	return k
}

// updateInput renders st as a conditional UpdateItem: the guard as the
// condition, the patch as SET clauses.
func updateInput(table, id string, shards int, st *step) *dynamodb.UpdateItemInput {
	e := &expression{names: map[string]string{}, values: map[string]types.AttributeValue{}}
	g := st.guard
	cond := []string{
		e.name(jobitem.AttrStatus) + " = " + e.value(str(string(g.status))),
		e.name(jobitem.AttrGeneration) + " = " + e.value(num(g.generation)),
		e.name(jobitem.AttrVersion) + " = " + e.value(num(g.version)),
	}
	if g.owner != "" {
		cond = append(cond, e.name(jobitem.AttrLeaseOwner)+" = "+e.value(str(g.owner)))
	}
	if g.tenant != "" {
		cond = append(cond, e.name(jobitem.AttrTenant)+" = "+e.value(str(g.tenant)))
	}
	if !g.expiredBefore.IsZero() {
		cond = append(cond, e.name(jobitem.AttrLeaseExpiresAt)+" < "+e.value(millis(g.expiredBefore)))
	}
	var sets []string
	for _, av := range patchValues(&st.patch) {
		sets = append(sets, e.name(av.name)+" = "+e.value(av.value))
	}
	update := "SET " + strings.Join(sets, ", ")
	if st.patch.status.Final() {
		// Into the finished index, at the time of this transition, and out
		// of the live index: it lists only live jobs.
		update += ", " + e.name(attrFinishedShard) + " = " + e.value(str(LiveShardOf(id, shards))) +
			", " + e.name(attrFinishedKey) + " = " + e.value(str(FinishedKey(id, st.patch.updatedAt))) +
			" REMOVE " + e.name(attrLiveShard)
	} else {
		// Written at creation: a job keeps that shard whatever the count
		// of a later writer (a count may grow). Set when absent, so that an
		// item written before the index existed joins it at its next
		// transition.
		ls := e.name(attrLiveShard)
		update = "SET " + ls + " = if_not_exists(" + ls + ", " + e.value(str(LiveShardOf(id, shards))) + "), " + strings.Join(sets, ", ")
	}
	return &dynamodb.UpdateItemInput{
		TableName:                           aws.String(table),
		Key:                                 map[string]types.AttributeValue{jobitem.AttrJobID: str(id)},
		ConditionExpression:                 aws.String(strings.Join(cond, " AND ")),
		UpdateExpression:                    aws.String(update),
		ExpressionAttributeNames:            e.names,
		ExpressionAttributeValues:           e.values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// Create implements Store: one TransactWriteItems of two conditional puts,
// the job and its intent marker. When the intent already has a job, the
// cancelled transaction returns the marker and one more read returns the
// job.
func (s *DynamoStore) Create(ctx context.Context, req CreateRequest) (CreateResult, error) {
	if err := req.validate(); err != nil {
		return CreateResult{}, createError(&req, err)
	}
	if err := s.recordLiveShards(ctx); err != nil {
		return CreateResult{}, createError(&req, err)
	}
	now := s.cfg.now()
	job, marker := newJob(&req, nil, now, &s.cfg)
	job = normalize(job)
	notExists := "attribute_not_exists(#k)"
	keyName := map[string]string{"#k": jobitem.AttrJobID}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{
			TableName: aws.String(s.table), Item: jobItem(&job, s.shards),
			ConditionExpression: aws.String(notExists), ExpressionAttributeNames: keyName,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Put: &types.Put{
			TableName: aws.String(s.table), Item: markerItem(&marker),
			ConditionExpression: aws.String(notExists), ExpressionAttributeNames: keyName,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
	}}
	for round := 1; round <= maxRounds; round++ {
		_, err := s.api.TransactWriteItems(ctx, in)
		if err == nil {
			return CreateResult{Job: job}, nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) || len(tce.CancellationReasons) != 2 {
			return CreateResult{}, createError(&req, err)
		}
		jobReason, markerReason := tce.CancellationReasons[0], tce.CancellationReasons[1]
		if !conditionFailed(jobReason) && !conditionFailed(markerReason) && !conflict(jobReason) && !conflict(markerReason) {
			return CreateResult{}, createError(&req, err)
		}
		res, found, dangling, err := s.resolveCreate(ctx, &req, &job, jobReason, markerReason)
		if err != nil || found {
			return res, createError(&req, err)
		}
		if dangling != nil {
			// The marker outlived its job: write a job of the successor id
			// over it, provided it is still that marker (a concurrent retry
			// may have done so first).
			job, marker = newJob(&req, dangling, now, &s.cfg)
			job = normalize(job)
			in.TransactItems[0].Put.Item, in.TransactItems[1].Put.Item = jobItem(&job, s.shards), markerItem(&marker)
			overwrite(in.TransactItems[1].Put, dangling)
			continue
		}
		// A concurrent transaction on the same items, or what was in the
		// way has gone: try again.
		if err := backoff.Sleep(ctx, backoff.Delay(createRetryBase, createRetryMax, round)); err != nil {
			return CreateResult{}, createError(&req, err)
		}
	}
	return CreateResult{}, createError(&req, errors.New("the intent's items kept changing; giving up"))
}

// resolveCreate reads what cancelled the transaction and lets the state
// machine's resolveCreate decide. found is false when nothing was in the
// way; dangling is then the intent's marker when it was in the way but its
// job is gone (the marker is free), else nil.
func (s *DynamoStore) resolveCreate(ctx context.Context, req *CreateRequest, job *Job,
	jobReason, markerReason types.CancellationReason,
) (res CreateResult, found bool, dangling *intentMarker, err error) {
	if conditionFailed(markerReason) {
		item := markerReason.Item
		if len(item) == 0 {
			if item, err = s.get(ctx, IntentKey(req.Tenant, req.IntentID)); err != nil || item == nil {
				return CreateResult{}, false, nil, err
			}
		}
		m, err := decodeMarker(item)
		if err != nil {
			return CreateResult{}, false, nil, err
		}
		existing, err := s.getJob(ctx, m.JobID)
		if err != nil {
			return CreateResult{}, false, nil, err
		}
		res, free, err := resolveCreate(req, &m, existing)
		if free {
			return CreateResult{}, false, &m, nil
		}
		return res, true, nil, err
	}
	if conditionFailed(jobReason) {
		var existing *Job
		if len(jobReason.Item) > 0 {
			j, err := FromItem(jobReason.Item)
			if err != nil {
				return CreateResult{}, false, nil, err
			}
			existing = &j
		} else if existing, err = s.getJob(ctx, job.ID); err != nil || existing == nil {
			return CreateResult{}, false, nil, err
		}
		res, _, err := resolveCreate(req, nil, existing)
		return res, true, nil, err
	}
	return CreateResult{}, false, nil, nil
}

// overwrite makes the marker's put of a Create write over m, the marker of
// a job that is gone, and over nothing else: the put's condition is that
// no marker is there, or m still is (the job it names, and when it was
// written). A marker another create wrote meanwhile fails the condition.
func overwrite(put *types.Put, m *intentMarker) {
	put.ConditionExpression = aws.String("attribute_not_exists(#k) OR (#job = :job AND #created = :created)")
	put.ExpressionAttributeNames = map[string]string{"#k": jobitem.AttrJobID, "#job": attrCreatedJobID, "#created": jobitem.AttrCreatedAt}
	put.ExpressionAttributeValues = map[string]types.AttributeValue{":job": str(m.JobID), ":created": millis(m.CreatedAt)}
}

func conditionFailed(r types.CancellationReason) bool {
	return aws.ToString(r.Code) == "ConditionalCheckFailed"
}

func conflict(r types.CancellationReason) bool {
	return aws.ToString(r.Code) == "TransactionConflict"
}
