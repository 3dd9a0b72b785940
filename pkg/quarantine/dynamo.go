package quarantine

import (
	"context"
	"errors"
	"fmt"
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
)

// DynamoAPI is the part of the DynamoDB client DynamoStore calls:
// *dynamodb.Client implements it, and a test may pass a fake (which
// quarantinetest.Run must then hold to the same behaviour as the table).
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// The quarantine table's layout, which template.yaml's QuarantineTable
// declares (internal/dev/samtemplate's tests hold the two together). See the
// package documentation for what each item holds.
const (
	// KeyHold is the partition key (S): "<queue>#<group>", so a group's
	// hold and its messages share one partition.
	KeyHold = "hold"
	// KeySort is the sort key (S): SortHold for the hold record,
	// MessagePrefix and the sequence key for a message.
	KeySort = "sk"
	// SortHold is the sort key of a group's hold record.
	SortHold = "hold"
	// MessagePrefix starts the sort key of a parked message.
	MessagePrefix = "m#"

	// HeldIndex is the sparse global secondary index of the holds that are
	// not released (Holds), keys only: hash AttrHeldQueue, range AttrHeldAt.
	HeldIndex = "held"
	// AttrHeldQueue (S) is the queue's name on a hold that is not
	// released, absent otherwise: what keeps HeldIndex sparse.
	AttrHeldQueue = "held_queue"
	// AttrHeldAt (N, Unix milliseconds) is when the hold was last held.
	AttrHeldAt = "held_at"
	// AttrExpiresAt (N, Unix seconds) is the table's TTL attribute, set on
	// released holds and on messages done or discarded: TombstoneTTL after
	// their last write.
	AttrExpiresAt = "expires_at"
)

// TombstoneTTL is how long a released hold and a message done or
// discarded are kept after their last write, so that a late redelivery or
// a late redriven copy is recognised and dropped: SQS keeps a message at
// most 14 days, and a day more covers the clocks and TTL's own delay.
const TombstoneTTL = 15 * 24 * time.Hour

// The other attributes of the items.
const (
	attrQueue     = "queue"
	attrGroup     = "group"
	attrState     = "state"
	attrEpoch     = "epoch"
	attrParked    = "parked"
	attrCause     = "cause"
	attrFrom      = "from"
	attrThrough   = "through"
	attrNext      = "next"
	attrVersion   = "version" // the hold record's, raised by each write: the condition of the next
	attrUpdatedAt = "updated_at"
	// a hold's Attempts (Kafka): the record's sequence key, its failed
	// attempts, the last cause
	attrFailSeq   = "fail_seq"
	attrFailCount = "fail_count"
	attrFailCause = "fail_cause"

	attrStatus       = "status"
	attrMessageID    = "message_id"
	attrBody         = "body"
	attrBodyKey      = "body_key"
	attrBodyMD5      = "body_md5"
	attrNonce        = "nonce"
	attrBodySize     = "body_size"
	attrAttributes   = "attributes"
	attrDedupID      = "deduplication_id"
	attrReceiveCount = "receive_count"
	attrParkedAt     = "parked_at"
	// a parked Kafka record's: a marker (BOOL true), its key and value (B),
	// its headers (a list of maps of name and value, each B)
	attrKafka       = "kafka"
	attrRecordKey   = "record_key"
	attrValue       = "value"
	attrHeaders     = "headers"
	attrHeaderName  = "name"
	attrHeaderValue = "value"

	// the fields of one message attribute in attrAttributes
	attrDataType    = "data_type"
	attrStringValue = "string_value"
	attrBinaryValue = "binary_value"
)

// MaxParkMessages is the most messages one Park call may carry on
// DynamoDB: a transaction holds 100 actions, one of them the hold's.
const MaxParkMessages = 99

const (
	maxBatchGet = 100 // keys per BatchGetItem
	// maxRounds bounds the tries of one write that loses races (another
	// write of the same hold, a transaction in progress on its items) and
	// the requests for keys a BatchGetItem left unprocessed.
	maxRounds  = 12
	retryBase  = 10 * time.Millisecond
	retryLimit = time.Second
)

// DynamoStore is the Store on one DynamoDB table (the package
// documentation describes its items). Every write is conditional on the
// hold record's version as the store last read it, so the rules of
// rules.go apply to exactly the record they were computed from; a write
// that loses a race takes the record its refusal returns and tries again.
type DynamoStore struct {
	api   DynamoAPI
	table string
}

var _ Store = (*DynamoStore)(nil)

// DynamoConfig configures a DynamoStore.
type DynamoConfig struct {
	// Client is the DynamoDB client. Required.
	Client DynamoAPI
	// Table is the name of a table with the key schema and index of
	// template.yaml's QuarantineTable. Required.
	Table string
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c DynamoConfig) Validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	case c.Table == "":
		return fmt.Errorf("%w: Table is empty", ErrInvalidConfig)
	}
	return nil
}

// NewDynamoStore returns a store on cfg.Table, or an error wrapping
// ErrInvalidConfig.
func NewDynamoStore(cfg DynamoConfig) (*DynamoStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &DynamoStore{api: cfg.Client, table: cfg.Table}, nil
}

// partition is the partition key of queue's group. A queue name has no
// '#' (SQS allows letters, digits, '-' and '_'), so the key names one
// group of one queue, whatever the group id holds.
func partition(queue, group string) (string, error) {
	if strings.Contains(queue, "#") {
		return "", fmt.Errorf("quarantine: queue name %q contains '#', which no SQS queue name does", queue)
	}
	return queue + "#" + group, nil
}

// storedHold is a hold record as read, with its version; ok is false when
// there is no record (version 0).
type storedHold struct {
	rec     HoldRecord
	version int64
	ok      bool
}

// Read implements Store: one strongly consistent BatchGetItem for up to
// 100 keys (each group's hold and each message), one more per 100 keys
// beyond, and one more for any keys DynamoDB left unprocessed.
func (s *DynamoStore) Read(ctx context.Context, queue string, groups []string, keys []ItemKey) (map[string]HoldRecord, map[ItemKey]Parked, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	fail := func(err error) (map[string]HoldRecord, map[ItemKey]Parked, error) {
		return nil, nil, fmt.Errorf("quarantine: read %d holds and %d messages of %s: %w", len(groups), len(keys), queue, err)
	}
	seen := map[[2]string]bool{}
	var want []map[string]types.AttributeValue
	add := func(group, sk string) error {
		pk, err := partition(queue, group)
		if err != nil {
			return err
		}
		if !seen[[2]string{pk, sk}] {
			seen[[2]string{pk, sk}] = true
			want = append(want, itemKey(pk, sk))
		}
		return nil
	}
	for _, g := range groups {
		if err := add(g, SortHold); err != nil {
			return fail(err)
		}
	}
	for _, k := range keys {
		if err := add(k.Group, MessagePrefix+k.Sequence); err != nil {
			return fail(err)
		}
	}
	holds := map[string]HoldRecord{}
	items := map[ItemKey]Parked{}
	for chunk := range slices.Chunk(want, maxBatchGet) {
		got, err := s.batchGet(ctx, chunk)
		if err != nil {
			return fail(err)
		}
		for _, item := range got {
			if sortKey(item) == SortHold {
				h, err := decodeHold(item)
				if err != nil {
					return fail(err)
				}
				holds[h.rec.Group] = h.rec
				continue
			}
			p, err := decodeMessage(item)
			if err != nil {
				return fail(err)
			}
			items[ItemKey{Group: p.Group, Sequence: p.Sequence}] = p
		}
	}
	return holds, items, nil
}

// Park implements Store. It reads the hold and the messages in one
// strongly consistent BatchGetItem, then writes, in one TransactWriteItems,
// each message not stored yet (on the condition that it still is not) and
// the hold the rules compute (on the condition of the version read). When
// the transaction is cancelled because some of the messages exist after
// all, those are dropped; when the hold changed, the refusal's copy of it
// is used; and the transaction is tried again, so no message is counted
// twice and the hold counts exactly the messages parked.
func (s *DynamoStore) Park(ctx context.Context, queue, group string, items []Parked, hold bool, cause string, now time.Time) (HoldRecord, error) {
	c := parkCall{queue: queue, group: group, items: items, hold: hold, cause: cause}
	fail, err := c.begin(ctx, func(items []Parked) error {
		if len(items) > MaxParkMessages {
			return fmt.Errorf("more than the %d messages one transaction holds", MaxParkMessages)
		}
		return nil
	})
	if err != nil {
		return HoldRecord{}, err
	}
	pk, err := partition(queue, group)
	if err != nil {
		return fail(err)
	}
	c.now = millis(now)
	var cur storedHold
	var exists map[string]bool
	reread := true
	for round := 1; ; round++ {
		if reread {
			if cur, exists, err = s.readPark(ctx, pk, items); err != nil {
				return fail(err)
			}
			reread = false
		}
		h, fresh, write, err := c.apply(cur.rec, cur.ok, func(seq string) bool { return exists[seq] })
		if err != nil {
			return fail(err)
		}
		if !write {
			return h, nil
		}
		tx := make([]types.TransactWriteItem, 0, len(fresh)+1)
		for i := range fresh {
			tx = append(tx, types.TransactWriteItem{Put: &types.Put{
				TableName:                aws.String(s.table),
				Item:                     messageItem(&fresh[i]),
				ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": KeyHold},
			}})
		}
		put := s.holdPut(h, cur)
		tx = append(tx, types.TransactWriteItem{Put: &types.Put{
			TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression,
			ExpressionAttributeNames: put.ExpressionAttributeNames, ExpressionAttributeValues: put.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
		werr := s.write(ctx, tx)
		if werr == nil {
			return h, nil
		}
		reasons, ok := cancellation(werr, len(tx))
		if !ok {
			return fail(werr)
		}
		holdReason := reasons[len(fresh)]
		allExist := true // every message refused: each exists
		for i, r := range reasons[:len(fresh)] {
			switch {
			case conditionFailed(r):
				exists[fresh[i].Sequence] = true
			case retryable(r):
				reread, allExist = true, false
			case quiet(r):
				allExist = false
			default:
				return fail(werr)
			}
		}
		switch {
		case conditionFailed(holdReason):
			next, known, err := holdFromItem(holdReason.Item)
			if err != nil {
				return fail(err)
			}
			if known && allExist && next.version == cur.version+1 && sameHold(next.rec, h) {
				// A retry of this very transaction, whose first try landed
				// and lost its answer.
				return h, nil
			}
			if known {
				cur = next
			} else {
				reread = true
			}
		case retryable(holdReason):
			reread = true
		case !quiet(holdReason):
			return fail(werr)
		}
		if round == maxRounds {
			return fail(fmt.Errorf("the hold kept changing: %w", werr))
		}
		if reread {
			if err := backoff.Sleep(ctx, backoff.Delay(retryBase, retryLimit, round)); err != nil {
				return fail(err)
			}
		}
	}
}

// readPark reads the hold at pk and which of items are stored, in one
// strongly consistent BatchGetItem (Park takes at most 99 items).
func (s *DynamoStore) readPark(ctx context.Context, pk string, items []Parked) (storedHold, map[string]bool, error) {
	keys := []map[string]types.AttributeValue{itemKey(pk, SortHold)}
	for _, p := range items {
		keys = append(keys, itemKey(pk, MessagePrefix+p.Sequence))
	}
	got, err := s.batchGet(ctx, keys)
	if err != nil {
		return storedHold{}, nil, err
	}
	var cur storedHold
	exists := map[string]bool{}
	for _, item := range got {
		sk := sortKey(item)
		if sk == SortHold {
			if cur, err = decodeHold(item); err != nil {
				return storedHold{}, nil, err
			}
			continue
		}
		exists[strings.TrimPrefix(sk, MessagePrefix)] = true
	}
	return cur, exists, nil
}

// holdPut is the PutItem of hold h over cur: on the condition that the
// record is still at cur's version (or still absent), with the version
// raised.
func (s *DynamoStore) holdPut(h HoldRecord, cur storedHold) *dynamodb.PutItemInput {
	in := &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                holdItem(&h, cur.version+1),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if cur.ok {
		in.ConditionExpression = aws.String("#v = :v")
		in.ExpressionAttributeNames = map[string]string{"#v": attrVersion}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": num(cur.version)}
	} else {
		in.ConditionExpression = aws.String("attribute_not_exists(#pk)")
		in.ExpressionAttributeNames = map[string]string{"#pk": KeyHold}
	}
	return in
}

// Done implements Store: a strongly consistent GetItem of the hold, then
// one TransactWriteItems that marks the message done (on the condition
// that it is parked) and writes the hold, decremented or released as the
// count read says (on the condition of the version read, so the count is
// still the one read). A refusal of the hold's condition returns the hold
// as it is now, and the write is tried again from it.
func (s *DynamoStore) Done(ctx context.Context, queue, group, seq string, epoch int64, now time.Time) (HoldRecord, error) {
	return s.unpark(ctx, doneCall(queue, group, seq, epoch), now)
}

// Discard implements Store as Done does, under any state but released.
func (s *DynamoStore) Discard(ctx context.Context, queue, group, seq string, now time.Time) (HoldRecord, error) {
	return s.unpark(ctx, discardCall(queue, group, seq), now)
}

func (s *DynamoStore) unpark(ctx context.Context, c unparkCall, now time.Time) (HoldRecord, error) {
	fail, err := c.begin(ctx)
	if err != nil {
		return HoldRecord{}, err
	}
	queue, group, seq, to := c.queue, c.group, c.seq, c.to
	pk, err := partition(queue, group)
	if err != nil {
		return fail(err)
	}
	now = millis(now)
	cur, err := s.getHold(ctx, pk)
	if err != nil {
		return fail(err)
	}
	for round := 1; ; round++ {
		if err := c.refusal(cur.rec, cur.ok); err != nil {
			return fail(err)
		}
		next := ""
		if needsNext(cur.rec, seq) {
			// Read after the hold: a message parked since is in the
			// query, or the hold's version has moved and the write below
			// is refused.
			if next, err = s.nextParked(ctx, pk, seq, false); err != nil {
				return fail(err)
			}
		}
		h := unparkedHold(cur.rec, seq, next, now)
		put := s.holdPut(h, cur)
		werr := s.write(ctx, []types.TransactWriteItem{
			{Update: &types.Update{
				TableName:           aws.String(s.table),
				Key:                 itemKey(pk, MessagePrefix+seq),
				UpdateExpression:    aws.String("SET #st = :to, #u = :now, #exp = :exp"),
				ConditionExpression: aws.String("#st = :parked"),
				ExpressionAttributeNames: map[string]string{
					"#st": attrStatus, "#u": attrUpdatedAt, "#exp": AttrExpiresAt,
				},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":to": str(string(to)), ":now": num(now.UnixMilli()), ":exp": num(expiry(now)),
					":parked": str(string(StatusParked)),
				},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}},
			{Put: &types.Put{
				TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression,
				ExpressionAttributeNames: put.ExpressionAttributeNames, ExpressionAttributeValues: put.ExpressionAttributeValues,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}},
		})
		if werr == nil {
			return h, nil
		}
		reasons, ok := cancellation(werr, 2)
		if !ok {
			return fail(werr)
		}
		msgReason, holdReason := reasons[0], reasons[1]
		switch {
		case conditionFailed(holdReason):
			next, known, derr := holdFromItem(holdReason.Item)
			if derr != nil {
				return fail(derr)
			}
			if known && next.version == cur.version+1 && sameHold(next.rec, h) && ownUnpark(msgReason, to, now) {
				// A retry of this very transaction, whose first try landed
				// and lost its answer.
				return h, nil
			}
			if !known {
				if next, err = s.getHold(ctx, pk); err != nil {
					return fail(err)
				}
			}
			cur = next
		case retryable(holdReason) || retryable(msgReason):
			if err := backoff.Sleep(ctx, backoff.Delay(retryBase, retryLimit, round)); err != nil {
				return fail(err)
			}
			if cur, err = s.getHold(ctx, pk); err != nil {
				return fail(err)
			}
		case conditionFailed(msgReason):
			return fail(fmt.Errorf("the message is not parked: %w", ErrNotParked))
		default:
			return fail(werr)
		}
		if round == maxRounds {
			return fail(fmt.Errorf("the hold kept changing: %w", werr))
		}
	}
}

// ownUnpark reports whether a message's refusal shows it already at
// status to, written at now: the mark of the same transaction's first try.
func ownUnpark(r types.CancellationReason, to Status, now time.Time) bool {
	if !conditionFailed(r) || len(r.Item) == 0 {
		return false
	}
	d := ddbitem.New(r.Item)
	status, updated := d.String(attrStatus), d.Int(attrUpdatedAt)
	return d.Err() == nil && Status(status) == to && updated == now.UnixMilli()
}

// BeginRedrive implements Store: a strongly consistent GetItem, then one
// PutItem of the redriven hold on the condition of the version read.
func (s *DynamoStore) BeginRedrive(ctx context.Context, queue, group string, now time.Time) (HoldRecord, error) {
	if err := ctx.Err(); err != nil {
		return HoldRecord{}, err
	}
	fail := func(err error) (HoldRecord, error) {
		return HoldRecord{}, fmt.Errorf("quarantine: begin a redrive of group %q of %s: %w", group, queue, err)
	}
	pk, err := partition(queue, group)
	if err != nil {
		return fail(err)
	}
	now = millis(now)
	cur, err := s.getHold(ctx, pk)
	if err != nil {
		return fail(err)
	}
	for round := 1; ; round++ {
		if !cur.ok || cur.rec.State == StateReleased {
			return fail(fmt.Errorf("no hold, or a released one: %w", ErrNoHold))
		}
		oldest := ""
		if needsOldest(cur.rec) {
			// A record written before holds kept their next: the oldest
			// message parked under it is at or above its From.
			if oldest, err = s.nextParked(ctx, pk, cur.rec.From, true); err != nil {
				return fail(err)
			}
		}
		h := redrivenHold(cur.rec, oldest, now)
		_, werr := s.api.PutItem(ctx, s.holdPut(h, cur))
		if werr == nil {
			return h, nil
		}
		var refused *types.ConditionalCheckFailedException
		var conflict *types.TransactionConflictException
		switch {
		case errors.As(werr, &refused):
			next, known, derr := holdFromItem(refused.Item)
			if derr != nil {
				return fail(derr)
			}
			if known && next.version == cur.version+1 && sameHold(next.rec, h) {
				return h, nil // the SDK's retry of a put that landed and lost its answer
			}
			if !known {
				if next, err = s.getHold(ctx, pk); err != nil {
					return fail(err)
				}
			}
			cur = next
		case errors.As(werr, &conflict): // a transaction on the hold was under way
			if err := backoff.Sleep(ctx, backoff.Delay(retryBase, retryLimit, round)); err != nil {
				return fail(err)
			}
			if cur, err = s.getHold(ctx, pk); err != nil {
				return fail(err)
			}
		default:
			return fail(werr)
		}
		if round == maxRounds {
			return fail(fmt.Errorf("the hold kept changing: %w", werr))
		}
	}
}

// Failed implements Store: one UpdateItem of the hold record, which sets
// its Attempts (and, for a group without a record, creates it released),
// on the condition that its state and Attempts are as f.Seen and
// f.SeenHeld say; no read. A refusal returns the record as it is, and the
// update is computed from it and tried again. It raises the record's
// version, so that a Park or an unpark computed from the record before it
// is refused and computed again, keeping the count.
func (s *DynamoStore) Failed(ctx context.Context, queue, group string, f Failure, now time.Time) (Attempts, error) {
	if err := ctx.Err(); err != nil {
		return Attempts{}, err
	}
	fail := func(err error) (Attempts, error) {
		return Attempts{}, fmt.Errorf("quarantine: count a failed attempt of %s of group %q of %s: %w", SeqNumber(f.Sequence), group, queue, err)
	}
	if err := checkFailure(queue, group, f); err != nil {
		return fail(err)
	}
	pk, err := partition(queue, group)
	if err != nil {
		return fail(err)
	}
	now = millis(now)
	for round := 1; ; round++ {
		next := attemptsAfter(f.Seen, f)
		_, werr := s.api.UpdateItem(ctx, s.failedUpdate(pk, queue, group, f, next, now))
		if werr == nil {
			return next, nil
		}
		var refused *types.ConditionalCheckFailedException
		var conflict *types.TransactionConflictException
		switch {
		case errors.As(werr, &refused):
			f.Seen, f.SeenHeld = Attempts{}, false
			if len(refused.Item) > 0 {
				h, derr := decodeHold(refused.Item)
				if derr != nil {
					return fail(derr)
				}
				f.Seen, f.SeenHeld = h.rec.Attempts, h.rec.State != StateReleased
			}
		case errors.As(werr, &conflict): // a transaction on the hold was under way
			if err := backoff.Sleep(ctx, backoff.Delay(retryBase, retryLimit, round)); err != nil {
				return fail(err)
			}
		default:
			return fail(werr)
		}
		if round == maxRounds {
			return fail(fmt.Errorf("the hold kept changing: %w", werr))
		}
	}
}

// failedUpdate is the UpdateItem that writes next, the Attempts after f,
// on the condition that the hold at pk is as f says it was read: held or
// draining (SeenHeld), else released or absent (then it is created
// released, and its tombstone's TTL moves on); and counting f.Seen of
// f's record, or none of it.
func (s *DynamoStore) failedUpdate(pk, queue, group string, f Failure, next Attempts, now time.Time) *dynamodb.UpdateItemInput {
	names := map[string]string{
		"#pk": KeyHold, "#q": attrQueue, "#g": attrGroup, "#st": attrState, "#e": attrEpoch, "#pa": attrParked,
		"#ha": AttrHeldAt, "#u": attrUpdatedAt, "#v": attrVersion, "#fs": attrFailSeq, "#fc": attrFailCount, "#fca": attrFailCause,
	}
	values := map[string]types.AttributeValue{
		":q": str(queue), ":g": str(group), ":released": str(string(StateReleased)), ":zero": num(0), ":one": num(1),
		":now": num(now.UnixMilli()), ":fs": str(next.Sequence), ":fc": num(next.Failed),
	}
	set := "SET #q = if_not_exists(#q, :q), #g = if_not_exists(#g, :g), #st = if_not_exists(#st, :released), " +
		"#e = if_not_exists(#e, :zero), #pa = if_not_exists(#pa, :zero), #ha = if_not_exists(#ha, :now), " +
		"#u = if_not_exists(#u, :now), #v = if_not_exists(#v, :zero) + :one, #fs = :fs, #fc = :fc"
	state := "(attribute_not_exists(#pk) OR #st = :released)"
	if f.SeenHeld {
		state = "#st IN (:held, :draining)"
		values[":held"], values[":draining"] = str(string(StateHeld)), str(string(StateDraining))
		delete(names, "#pk") // DynamoDB refuses a name the expressions do not use
	} else {
		set += ", #exp = :exp"
		names["#exp"], values[":exp"] = AttrExpiresAt, num(expiry(now))
	}
	counted := "NOT (#fs = :fs)" // absent, or another record's
	if f.Seen.Sequence == f.Sequence && f.Seen.Failed > 0 {
		counted = "#fs = :fs AND #fc = :seen"
		values[":seen"] = num(f.Seen.Failed)
	}
	update := set
	if next.Cause != "" {
		update += ", #fca = :fca"
		values[":fca"] = str(next.Cause)
	} else {
		update += " REMOVE #fca"
	}
	return &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 itemKey(pk, SortHold),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(state + " AND " + counted),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// nextParkedPage is how many messages the first Query of nextParked reads:
// the message after the one done is almost always parked (the messages
// done come before it), and DynamoDB charges a Query for the whole items
// it reads, projection or not, so a page of one reads no body for nothing.
// Each further page is ten times larger, up to maxParkedPage, so that many
// messages discarded in a row cost few round trips.
const (
	nextParkedPage = 1
	maxParkedPage  = 100
)

// nextParked returns the sequence key of the oldest message still parked
// in partition pk after seq (from seq, when inclusive), or "" when there is
// none: strongly consistent Queries of growing pages (nextParkedPage),
// keys and statuses only.
func (s *DynamoStore) nextParked(ctx context.Context, pk, seq string, inclusive bool) (string, error) {
	cond := "#pk = :pk AND #sk > :after"
	if inclusive {
		cond = "#pk = :pk AND #sk >= :after"
	}
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		KeyConditionExpression:   aws.String(cond),
		ProjectionExpression:     aws.String("#sk, #st"),
		ExpressionAttributeNames: map[string]string{"#pk": KeyHold, "#sk": KeySort, "#st": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(pk), ":after": str(MessagePrefix + seq),
		},
		ConsistentRead: aws.Bool(true),
		Limit:          aws.Int32(nextParkedPage),
	}
	for {
		page, err := s.api.Query(ctx, in)
		if err != nil {
			return "", fmt.Errorf("find the message parked after %s: %w", SeqNumber(seq), err)
		}
		for _, item := range page.Items {
			st, _ := item[attrStatus].(*types.AttributeValueMemberS)
			if sk := sortKey(item); strings.HasPrefix(sk, MessagePrefix) && st != nil && st.Value == string(StatusParked) {
				return strings.TrimPrefix(sk, MessagePrefix), nil
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return "", nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
		in.Limit = aws.Int32(min(*in.Limit*10, maxParkedPage))
	}
}

// Hold implements Store: one strongly consistent GetItem.
func (s *DynamoStore) Hold(ctx context.Context, queue, group string) (HoldRecord, error) {
	if err := ctx.Err(); err != nil {
		return HoldRecord{}, err
	}
	pk, err := partition(queue, group)
	if err == nil {
		var cur storedHold
		if cur, err = s.getHold(ctx, pk); err == nil {
			if cur.ok {
				return cur.rec, nil
			}
			err = ErrNoHold
		}
	}
	return HoldRecord{}, fmt.Errorf("quarantine: hold of group %q of %s: %w", group, queue, err)
}

func (s *DynamoStore) getHold(ctx context.Context, pk string) (storedHold, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            itemKey(pk, SortHold),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return storedHold{}, err
	}
	if len(out.Item) == 0 {
		return storedHold{}, nil
	}
	return decodeHold(out.Item)
}

// Messages implements Store: a strongly consistent Query of the group's
// partition above the sort key of after, filtered by status, page by page
// until limit messages are found or the partition ends.
func (s *DynamoStore) Messages(ctx context.Context, queue, group string, status Status, after string, limit int) ([]Parked, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fail := func(err error) ([]Parked, error) {
		return nil, fmt.Errorf("quarantine: messages of group %q of %s: %w", group, queue, err)
	}
	pk, err := partition(queue, group)
	if err != nil {
		return fail(err)
	}
	// The hold's sort key ("hold") sorts below MessagePrefix ("m#"), and
	// nothing else is in the partition: every key above MessagePrefix+after
	// is a message's whose sequence key is greater than after.
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk > :after"),
		ExpressionAttributeNames: map[string]string{"#pk": KeyHold, "#sk": KeySort},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(pk), ":after": str(MessagePrefix + after),
		},
		ConsistentRead: aws.Bool(true),
	}
	if status != "" {
		in.FilterExpression = aws.String("#st = :st")
		in.ExpressionAttributeNames["#st"] = attrStatus
		in.ExpressionAttributeValues[":st"] = str(string(status))
	}
	var out []Parked
	for {
		if limit > 0 && status == "" {
			in.Limit = aws.Int32(int32(min(limit-len(out), math.MaxInt32)))
		}
		page, err := s.api.Query(ctx, in)
		if err != nil {
			return fail(err)
		}
		for _, item := range page.Items {
			if !strings.HasPrefix(sortKey(item), MessagePrefix) {
				continue
			}
			p, err := decodeMessage(item)
			if err != nil {
				return fail(err)
			}
			out = append(out, p)
			if limit > 0 && len(out) == limit {
				return out, nil
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// Holds implements Store: a Query of HeldIndex for the keys of the
// queue's holds, then strongly consistent BatchGetItems of the holds
// themselves (the index is eventually consistent: a hold released a moment
// ago may still be in it, and is left out here).
func (s *DynamoStore) Holds(ctx context.Context, queue string) ([]HoldRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if queue == "" {
		return nil, nil // no hold has an empty queue: Park refuses one
	}
	fail := func(err error) ([]HoldRecord, error) {
		return nil, fmt.Errorf("quarantine: holds of %s: %w", queue, err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(HeldIndex),
		KeyConditionExpression:    aws.String("#q = :q"),
		ExpressionAttributeNames:  map[string]string{"#q": AttrHeldQueue},
		ExpressionAttributeValues: map[string]types.AttributeValue{":q": str(queue)},
	}
	var keys []map[string]types.AttributeValue
	for {
		page, err := s.api.Query(ctx, in)
		if err != nil {
			return fail(err)
		}
		for _, item := range page.Items {
			keys = append(keys, map[string]types.AttributeValue{KeyHold: item[KeyHold], KeySort: item[KeySort]})
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	var out []HoldRecord
	for chunk := range slices.Chunk(keys, maxBatchGet) {
		got, err := s.batchGet(ctx, chunk)
		if err != nil {
			return fail(err)
		}
		for _, item := range got {
			h, err := decodeHold(item)
			if err != nil {
				return fail(err)
			}
			if h.rec.State != StateReleased {
				out = append(out, h.rec)
			}
		}
	}
	sortHolds(out)
	return out, nil
}

// batchGet reads keys (at most 100) with one strongly consistent
// BatchGetItem, and one more, after a backoff, for any keys left
// unprocessed.
func (s *DynamoStore) batchGet(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	for round := 1; len(keys) > 0; round++ {
		res, err := s.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			s.table: {Keys: keys, ConsistentRead: aws.Bool(true)},
		}})
		if err != nil {
			return nil, err
		}
		out = append(out, res.Responses[s.table]...)
		keys = res.UnprocessedKeys[s.table].Keys
		if len(keys) == 0 {
			break
		}
		if round == maxRounds {
			return nil, fmt.Errorf("%d keys still unprocessed after %d requests", len(keys), round)
		}
		if err := backoff.Sleep(ctx, backoff.Delay(retryBase, retryLimit, round)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// cancellation returns the reasons of a cancelled transaction of n actions.
func cancellation(err error, n int) ([]types.CancellationReason, bool) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != n {
		return nil, false
	}
	return tce.CancellationReasons, true
}

func conditionFailed(r types.CancellationReason) bool {
	return aws.ToString(r.Code) == "ConditionalCheckFailed"
}

// retryable: the action met another transaction or a throttle; it may
// succeed when tried again.
func retryable(r types.CancellationReason) bool {
	switch aws.ToString(r.Code) {
	case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
		return true
	}
	return false
}

// quiet: the action was not the cause of the cancellation.
func quiet(r types.CancellationReason) bool {
	c := aws.ToString(r.Code)
	return c == "" || c == "None"
}

func (s *DynamoStore) write(ctx context.Context, tx []types.TransactWriteItem) error {
	_, err := s.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
	return err
}

// sameHold reports whether a and b are the same record.
func sameHold(a, b HoldRecord) bool {
	ta, tb := [2]time.Time{a.HeldAt, a.UpdatedAt}, [2]time.Time{b.HeldAt, b.UpdatedAt}
	a.HeldAt, a.UpdatedAt, b.HeldAt, b.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return a == b && ta[0].Equal(tb[0]) && ta[1].Equal(tb[1])
}

// holdFromItem decodes the hold a refused condition returned; known is
// false when it returned none.
func holdFromItem(item map[string]types.AttributeValue) (storedHold, bool, error) {
	if len(item) == 0 {
		return storedHold{}, false, nil
	}
	h, err := decodeHold(item)
	return h, err == nil, err
}

// ---------------------------------------------------------------- items

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// millis is t as the table keeps it: whole milliseconds, in UTC.
func millis(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

// expiry is the TTL of a tombstone last written at t.
func expiry(t time.Time) int64 { return t.Add(TombstoneTTL).Unix() }

func itemKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{KeyHold: str(pk), KeySort: str(sk)}
}

func sortKey(item map[string]types.AttributeValue) string {
	sk, _ := item[KeySort].(*types.AttributeValueMemberS)
	if sk == nil {
		return ""
	}
	return sk.Value
}

func putStr(item map[string]types.AttributeValue, name, v string) {
	if v != "" {
		item[name] = str(v)
	}
}

// holdItem is hold h's record at version.
func holdItem(h *HoldRecord, version int64) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		KeyHold:       str(h.Queue + "#" + h.Group),
		KeySort:       str(SortHold),
		attrQueue:     str(h.Queue),
		attrGroup:     str(h.Group),
		attrState:     str(string(h.State)),
		attrEpoch:     num(h.Epoch),
		attrParked:    num(h.Parked),
		attrVersion:   num(version),
		AttrHeldAt:    num(h.HeldAt.UnixMilli()),
		attrUpdatedAt: num(h.UpdatedAt.UnixMilli()),
	}
	putStr(item, attrCause, h.Cause)
	putStr(item, attrFrom, h.From)
	putStr(item, attrThrough, h.Through)
	putStr(item, attrNext, h.Next)
	if h.Attempts.Sequence != "" {
		item[attrFailSeq] = str(h.Attempts.Sequence)
		item[attrFailCount] = num(h.Attempts.Failed)
		putStr(item, attrFailCause, h.Attempts.Cause)
	}
	if h.State == StateReleased {
		item[AttrExpiresAt] = num(expiry(h.UpdatedAt))
	} else {
		item[AttrHeldQueue] = str(h.Queue)
	}
	return item
}

func decodeHold(item map[string]types.AttributeValue) (storedHold, error) {
	d := ddbitem.New(item)
	h := storedHold{ok: true, rec: HoldRecord{
		Queue:     d.String(attrQueue),
		Group:     d.String(attrGroup),
		State:     State(d.String(attrState)),
		Epoch:     d.Int(attrEpoch),
		Parked:    d.Int(attrParked),
		Cause:     d.OptString(attrCause),
		From:      d.OptString(attrFrom),
		Through:   d.OptString(attrThrough),
		Next:      d.OptString(attrNext),
		HeldAt:    d.Millis(AttrHeldAt),
		UpdatedAt: d.Millis(attrUpdatedAt),
		Attempts: Attempts{
			Sequence: d.OptString(attrFailSeq),
			Failed:   d.OptInt(attrFailCount),
			Cause:    d.OptString(attrFailCause),
		},
	}}
	h.version = d.Int(attrVersion)
	err := d.Err()
	switch h.rec.State {
	case StateHeld, StateDraining, StateReleased:
	default:
		if err == nil {
			err = fmt.Errorf("state %q", h.rec.State)
		}
	}
	if err != nil {
		return storedHold{}, fmt.Errorf("quarantine: hold record %q: %w", partitionOf(item), err)
	}
	return h, nil
}

// messageItem is message p's item.
func messageItem(p *Parked) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		KeyHold:          str(p.Queue + "#" + p.Group),
		KeySort:          str(MessagePrefix + p.Sequence),
		attrQueue:        str(p.Queue),
		attrGroup:        str(p.Group),
		attrStatus:       str(string(p.Status)),
		attrBodySize:     num(p.BodySize),
		attrReceiveCount: num(int64(p.ReceiveCount)),
		attrParkedAt:     num(p.ParkedAt.UnixMilli()),
		attrUpdatedAt:    num(p.UpdatedAt.UnixMilli()),
	}
	putStr(item, attrMessageID, p.MessageID)
	putStr(item, attrBody, p.Body)
	putStr(item, attrBodyKey, p.BodyKey)
	putStr(item, attrBodyMD5, p.BodyMD5)
	putStr(item, attrDedupID, p.DeduplicationID)
	putStr(item, attrNonce, p.Nonce)
	putStr(item, attrCause, p.Cause)
	if len(p.Attributes) > 0 {
		attrs := make(map[string]types.AttributeValue, len(p.Attributes))
		for name, a := range p.Attributes {
			v := map[string]types.AttributeValue{attrDataType: str(a.DataType)}
			putStr(v, attrStringValue, a.StringValue)
			if len(a.BinaryValue) > 0 {
				v[attrBinaryValue] = &types.AttributeValueMemberB{Value: a.BinaryValue}
			}
			attrs[name] = &types.AttributeValueMemberM{Value: v}
		}
		item[attrAttributes] = &types.AttributeValueMemberM{Value: attrs}
	}
	if p.Kafka != nil {
		putKafka(item, p.Kafka)
	}
	if p.Status != StatusParked {
		item[AttrExpiresAt] = num(expiry(p.UpdatedAt))
	}
	return item
}

// putKafka puts a parked Kafka record's key, value and headers in its
// item, as binary: Kafka's bytes need not be UTF-8, which a DynamoDB string
// must be.
func putKafka(item map[string]types.AttributeValue, k *KafkaRecord) {
	item[attrKafka] = &types.AttributeValueMemberBOOL{Value: true}
	putBin(item, attrRecordKey, k.Key)
	putBin(item, attrValue, k.Value)
	if len(k.Headers) == 0 {
		return
	}
	hs := make([]types.AttributeValue, len(k.Headers))
	for i, h := range k.Headers {
		m := map[string]types.AttributeValue{}
		putBin(m, attrHeaderName, []byte(h.Key))
		putBin(m, attrHeaderValue, h.Value)
		hs[i] = &types.AttributeValueMemberM{Value: m}
	}
	item[attrHeaders] = &types.AttributeValueMemberL{Value: hs}
}

func putBin(item map[string]types.AttributeValue, name string, v []byte) {
	if len(v) > 0 {
		item[name] = &types.AttributeValueMemberB{Value: v}
	}
}

// kafkaRecord reads a parked Kafka record's key, value and headers from
// its item; nil for an SQS message's.
func kafkaRecord(item map[string]types.AttributeValue, d *ddbitem.Decoder) (*KafkaRecord, error) {
	if marker, ok := item[attrKafka].(*types.AttributeValueMemberBOOL); !ok || !marker.Value {
		return nil, nil
	}
	k := &KafkaRecord{Key: d.OptBinary(attrRecordKey), Value: d.OptBinary(attrValue)}
	av, ok := item[attrHeaders]
	if !ok {
		return k, nil
	}
	list, ok := av.(*types.AttributeValueMemberL)
	if !ok {
		return nil, fmt.Errorf("attribute %s: a %s, not a list", attrHeaders, ddbitem.TypeName(av))
	}
	for i, e := range list.Value {
		m, ok := e.(*types.AttributeValueMemberM)
		if !ok {
			return nil, fmt.Errorf("attribute %s[%d]: a %s, not a map", attrHeaders, i, ddbitem.TypeName(e))
		}
		hd := ddbitem.New(m.Value)
		h := KafkaHeader{Key: string(hd.OptBinary(attrHeaderName)), Value: hd.OptBinary(attrHeaderValue)}
		if err := hd.Err(); err != nil {
			return nil, fmt.Errorf("attribute %s[%d]: %w", attrHeaders, i, err)
		}
		k.Headers = append(k.Headers, h)
	}
	return k, nil
}

func decodeMessage(item map[string]types.AttributeValue) (Parked, error) {
	d := ddbitem.New(item)
	sk := sortKey(item)
	p := Parked{
		Queue:           d.String(attrQueue),
		Group:           d.String(attrGroup),
		Sequence:        strings.TrimPrefix(sk, MessagePrefix),
		MessageID:       d.OptString(attrMessageID),
		Body:            d.OptString(attrBody),
		BodyKey:         d.OptString(attrBodyKey),
		BodyMD5:         d.OptString(attrBodyMD5),
		BodySize:        d.Int(attrBodySize),
		DeduplicationID: d.OptString(attrDedupID),
		Nonce:           d.OptString(attrNonce),
		ReceiveCount:    int(d.Int(attrReceiveCount)),
		Cause:           d.OptString(attrCause),
		Status:          Status(d.String(attrStatus)),
		ParkedAt:        d.Millis(attrParkedAt),
		UpdatedAt:       d.Millis(attrUpdatedAt),
	}
	p.Attributes = messageAttributes(d, attrAttributes)
	k, err := kafkaRecord(item, d)
	p.Kafka = k
	if err == nil {
		err = d.Err()
	}
	switch {
	case err != nil:
	case p.Status != StatusParked && p.Status != StatusDone && p.Status != StatusDiscarded:
		err = fmt.Errorf("status %q", p.Status)
	case !strings.HasPrefix(sk, MessagePrefix):
		err = fmt.Errorf("sort key %q is not a message's", sk)
	}
	if err != nil {
		return Parked{}, fmt.Errorf("quarantine: message item %q %q: %w", partitionOf(item), sk, err)
	}
	return p, nil
}

// partitionOf is an item's partition key, for an error that names the
// item.
func partitionOf(item map[string]types.AttributeValue) string {
	pk, _ := item[KeyHold].(*types.AttributeValueMemberS)
	if pk == nil {
		return ""
	}
	return pk.Value
}

// messageAttributes reads a message's SQS attributes: a map of maps, each
// with its data type and a string or binary value; nil when absent.
func messageAttributes(d *ddbitem.Decoder, name string) map[string]MessageAttribute {
	m, ok := d.OptMap(name)
	if !ok {
		return nil
	}
	out := make(map[string]MessageAttribute, len(m.Names()))
	for _, attr := range m.Names() {
		f, ok := m.OptMap(attr)
		if !ok {
			return nil
		}
		out[attr] = MessageAttribute{DataType: f.String(attrDataType), StringValue: f.OptString(attrStringValue), BinaryValue: f.OptBinary(attrBinaryValue)}
	}
	return out
}
