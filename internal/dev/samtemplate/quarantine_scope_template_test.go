package samtemplate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// consumers are the functions that run under a queue's quarantine, each
// with the queue it consumes.
var consumers = map[string]string{"WorkerFunction": "CommandsQueue", "ProjectorFunction": "EventsQueue"}

// leadingKeys is the condition that holds a role to the quarantine items
// of queue: DynamoDB's dynamodb:LeadingKeys are the partition key values a
// request names (every key of a BatchGetItem, each item of a transaction,
// a Query's partition), and each must be the queue's name, '#', a group.
func leadingKeys(queue string) map[string]any {
	return map[string]any{"ForAllValues:StringLike": map[string]any{
		"dynamodb:LeadingKeys": []any{map[string]any{"Fn::Sub": "${" + queue + ".QueueName}#*"}},
	}}
}

// bodiesOf is where a role may put the parked bodies of queue's messages.
func bodiesOf(queue string) map[string]any {
	return map[string]any{"Fn::Sub": "${CandidatesBucket.Arn}/quarantine/${" + queue + ".QueueName}/*"}
}

// Each consumer parks, releases and redrives only its own queue's groups:
// every grant of its role on the quarantine table carries the leading-keys
// condition of its queue, and its grant on parked bodies names its queue's
// prefix. Neither role can hold, release or overwrite the other queue's
// holds and bodies.
func TestTemplateEachConsumerTouchesOnlyItsQueuesQuarantine(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	for fn, queue := range consumers {
		require.Equal(t, queue, consumedQueue(t, tpl, fn))
		var table, bodies int
		for _, s := range roleStatements(t, tpl, fn) {
			for _, r := range asList(s["Resource"]) {
				switch {
				case namesQuarantineTable(r):
					table++
					require.Equal(t, leadingKeys(queue), s["Condition"], "%s: %v on the quarantine table, for %s's groups only", fn, s["Action"], queue)
				case namesQuarantineBodies(r):
					bodies++
					require.Equal(t, bodiesOf(queue), r, "%s: %v on parked bodies, of %s only", fn, s["Action"], queue)
				}
			}
		}
		require.Positive(t, table, "%s: no grant on the quarantine table", fn)
		require.Positive(t, bodies, "%s: no grant on parked bodies", fn)
	}
}

// The scopes above are what pkg/quarantine writes: for the names a deployed
// stack gives the queues, the partition key of every request the store
// makes for a queue's group, and the key of a parked body, match its
// queue's scope and not the other queue's.
func TestTemplateQuarantineScopesMatchTheKeysTheQuarantineWrites(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	names := map[string]string{}
	for _, queue := range consumers {
		sub, _ := asMap(tpl.Resources[queue].Properties["QueueName"])["Fn::Sub"].(string)
		require.Contains(t, sub, "${AWS::StackName}", "%s: named after the stack", queue)
		names[queue] = strings.ReplaceAll(sub, "${AWS::StackName}", "fifoworker")
	}
	require.NotEqual(t, names["CommandsQueue"], names["EventsQueue"])
	scope := func(pattern, queue string) string {
		return strings.ReplaceAll(pattern, "${"+queue+".QueueName}", names[queue])
	}
	for _, queue := range consumers {
		keys := partitionKeys(t, names[queue], "job-42")
		require.NotEmpty(t, keys)
		body := quarantine.BodyKey(names[queue], "job-42", strings.Repeat("0", 39)+"1")
		for _, other := range consumers {
			pk := scope(leadingKeys(other)["ForAllValues:StringLike"].(map[string]any)["dynamodb:LeadingKeys"].([]any)[0].(map[string]any)["Fn::Sub"].(string), other)
			bp := strings.TrimPrefix(scope(bodiesOf(other)["Fn::Sub"].(string), other), "${CandidatesBucket.Arn}/")
			for _, k := range keys {
				require.Equal(t, other == queue, stringLike(pk, k), "%s's key %q against %s's scope %q", queue, k, other, pk)
			}
			require.Equal(t, other == queue, stringLike(bp, body), "%s's body %q against %s's scope %q", queue, body, other, bp)
		}
	}
}

func TestStringLikeIsIAMs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"a#*", "a#g", true}, {"a#*", "a#", true}, {"a#*", "a#g/h#i", true},
		{"a#*", "ab#g", false}, {"a#*", "b#g", false}, {"a#*", "a", false},
		{"a.fifo#*", "aXfifo#g", false}, // '.' is itself
		{"a?c", "abc", true}, {"a?c", "ac", false}, {"*", "", true}, {"a*c*e", "abcde", true}, {"a*c*e", "abcd", false},
	} {
		require.Equal(t, c.want, stringLike(c.pattern, c.s), "%q like %q", c.s, c.pattern)
	}
}

// stringLike is IAM's StringLike: '*' matches any run of characters, '?'
// any one, everything else itself.
func stringLike(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if stringLike(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && stringLike(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && stringLike(pattern[1:], s[1:])
}

// consumedQueue is the queue of fn's SQS event source.
func consumedQueue(t *testing.T, tpl *samtemplate.Template, fn string) string {
	t.Helper()
	var queues []string
	for _, ev := range asMap(tpl.Resources[fn].Properties["Events"]) {
		if e := asMap(ev); e["Type"] == "SQS" {
			queues = append(queues, getAttTarget(asMap(e["Properties"])["Queue"]))
		}
	}
	require.Len(t, queues, 1, "%s consumes one queue", fn)
	return queues[0]
}

func namesQuarantineTable(r any) bool {
	if getAttTarget(r) == "QuarantineTable" {
		return true
	}
	sub, _ := asMap(r)["Fn::Sub"].(string)
	return strings.Contains(sub, "${QuarantineTable.Arn}")
}

func namesQuarantineBodies(r any) bool {
	sub, _ := asMap(r)["Fn::Sub"].(string)
	return strings.HasPrefix(sub, "${CandidatesBucket.Arn}/quarantine")
}

// partitionKeys returns the partition keys of the requests DynamoStore
// makes for a group of queue: a hold's read, a batch's check, a park.
func partitionKeys(t *testing.T, queue, group string) []string {
	t.Helper()
	rec := &keyRecorder{}
	store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: rec, Table: "quarantine"})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = store.Hold(ctx, queue, group)
	require.ErrorIs(t, err, quarantine.ErrNoHold)
	_, _, err = store.Read(ctx, queue, []string{group}, []quarantine.ItemKey{{Group: group, Sequence: strings.Repeat("0", 39) + "1"}})
	require.NoError(t, err)
	q, err := quarantine.New(quarantine.Config{Store: store, QueueARN: "arn:aws:sqs:eu-west-1:123456789012:" + queue})
	require.NoError(t, err)
	msg := events.SQSMessage{MessageId: "m-1", Body: "{}", Attributes: map[string]string{
		"MessageGroupId": group, "SequenceNumber": "1", "ApproximateReceiveCount": "1",
	}}
	_, err = q.Park(ctx, group, []*events.SQSMessage{&msg}, errors.New("a test"), true)
	require.ErrorIs(t, err, errRecorded, "the park's transaction was tried")
	return rec.keys
}

var errRecorded = errors.New("recorded, not applied")

// keyRecorder is a DynamoDB that records the partition keys (the
// quarantine table's hash key) each request names; it holds nothing and
// applies no write.
type keyRecorder struct{ keys []string }

var _ quarantine.DynamoAPI = (*keyRecorder)(nil)

func (r *keyRecorder) note(item map[string]types.AttributeValue) {
	if v, ok := item[quarantine.KeyHold].(*types.AttributeValueMemberS); ok {
		r.keys = append(r.keys, v.Value)
	}
}

func (r *keyRecorder) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.note(in.Key)
	return &dynamodb.GetItemOutput{}, nil
}

func (r *keyRecorder) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.note(in.Item)
	return nil, errRecorded
}

func (r *keyRecorder) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for _, ka := range in.RequestItems {
		for _, k := range ka.Keys {
			r.note(k)
		}
	}
	return &dynamodb.BatchGetItemOutput{}, nil
}

func (r *keyRecorder) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			r.note(it.Put.Item)
		case it.Update != nil:
			r.note(it.Update.Key)
		case it.ConditionCheck != nil:
			r.note(it.ConditionCheck.Key)
		case it.Delete != nil:
			r.note(it.Delete.Key)
		}
	}
	return nil, errRecorded
}

func (r *keyRecorder) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.note(in.Key)
	return nil, errRecorded
}

func (r *keyRecorder) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return nil, errors.New("keyRecorder: no Query here")
}
