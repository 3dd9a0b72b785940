package testenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// IAMRequest is what IAM authorises for one SDK request, or for one part
// of it (each table of a batch, each item of a transaction, each object of
// a multi-object delete): an action on a resource, with the condition keys
// the request sets (dynamodb:LeadingKeys, s3:prefix, s3:if-none-match,
// s3:ObjectCreationOperation; AsSentBy adds those of its sender).
type IAMRequest struct {
	Action   string // dynamodb:GetItem
	Resource string // an ARN
	Context  map[string][]string
}

func (r IAMRequest) String() string {
	s := r.Action + " " + r.Resource
	for _, k := range slices.Sorted(maps.Keys(r.Context)) {
		s += fmt.Sprintf(" %s=%q", k, r.Context[k])
	}
	return s
}

// IAMNames maps the names SDK requests carry (table names, queue URLs and
// names, bucket names) to what IAM sees: ARNs, and the key attributes
// that give dynamodb:LeadingKeys.
type IAMNames struct {
	Tables  map[string]IAMTable // by table name
	Queues  map[string]string   // queue ARN by URL and by name
	Buckets map[string]string   // bucket ARN by name
}

// IAMTable is a table as IAM sees it.
type IAMTable struct {
	ARN     string
	Hash    string            // the partition key attribute
	Indexes map[string]string // index name → its partition key attribute
}

// NamesOf maps the tables, queues and buckets a local deployment of tpl
// created.
func NamesOf(tpl *samtemplate.Template, deployed *localdeploy.Result) IAMNames {
	n := IAMNames{Tables: map[string]IAMTable{}, Queues: map[string]string{}, Buckets: map[string]string{}}
	for logical, ref := range deployed.Resources {
		arn := deployed.Attributes[logical]["Arn"]
		switch tpl.Resources[logical].Type {
		case "AWS::DynamoDB::Table":
			n.Tables[ref] = tableOf(tpl.Resources[logical].Properties, arn)
		case "AWS::SQS::Queue":
			n.Queues[ref] = arn
			n.Queues[deployed.Attributes[logical]["QueueName"]] = arn
		case "AWS::S3::Bucket":
			n.Buckets[ref] = arn
		}
	}
	return n
}

// tableOf reads a table's partition keys from its template properties.
func tableOf(props map[string]any, arn string) IAMTable {
	hash := func(schema any) string {
		list, _ := schema.([]any)
		for _, k := range list {
			m, _ := k.(map[string]any)
			if m["KeyType"] == "HASH" {
				return fmt.Sprint(m["AttributeName"])
			}
		}
		return ""
	}
	t := IAMTable{ARN: arn, Hash: hash(props["KeySchema"]), Indexes: map[string]string{}}
	for _, kind := range []string{"GlobalSecondaryIndexes", "LocalSecondaryIndexes"} {
		list, _ := props[kind].([]any)
		for _, ix := range list {
			m, _ := ix.(map[string]any)
			t.Indexes[fmt.Sprint(m["IndexName"])] = hash(m["KeySchema"])
		}
	}
	return t
}

// IAMRecorder records the IAM requests of the SDK clients it is installed
// on (o.APIOptions = append(o.APIOptions, r.Install)), once each: it sees
// a request's input before any retry, and a presigned request as the
// request it stands for. A request it cannot map is recorded as an action
// no policy allows ("unknown ..."), so that a test fails on it rather
// than passing it over.
type IAMRecorder struct {
	names IAMNames
	mu    sync.Mutex
	seen  map[string]IAMRequest
}

// ErrInvalidConfig is wrapped by NewIAMRecorder's error for a
// configuration that cannot work; the message names the field.
var ErrInvalidConfig = errors.New("testenv: invalid configuration")

// IAMRecorderConfig configures an IAMRecorder.
type IAMRecorderConfig struct {
	// Names maps the requests' names to what IAM sees (NamesOf). Required:
	// each of its ARNs an ARN, each table with its partition key. A name
	// it lacks is recorded as an action no policy allows.
	Names IAMNames
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c IAMRecorderConfig) Validate() error {
	for _, name := range slices.Sorted(maps.Keys(c.Names.Tables)) {
		switch t := c.Names.Tables[name]; {
		case !strings.HasPrefix(t.ARN, "arn:"):
			return fmt.Errorf("%w: Names.Tables[%q].ARN %q is not an ARN", ErrInvalidConfig, name, t.ARN)
		case t.Hash == "":
			return fmt.Errorf("%w: Names.Tables[%q].Hash is empty", ErrInvalidConfig, name)
		}
	}
	for _, set := range []struct {
		field string
		arns  map[string]string
	}{{"Queues", c.Names.Queues}, {"Buckets", c.Names.Buckets}} {
		for _, name := range slices.Sorted(maps.Keys(set.arns)) {
			if arn := set.arns[name]; !strings.HasPrefix(arn, "arn:") {
				return fmt.Errorf("%w: Names.%s[%q] %q is not an ARN", ErrInvalidConfig, set.field, name, arn)
			}
		}
	}
	return nil
}

// NewIAMRecorder records requests against cfg.Names, or returns an error
// wrapping ErrInvalidConfig.
func NewIAMRecorder(cfg IAMRecorderConfig) (*IAMRecorder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &IAMRecorder{names: cfg.Names, seen: map[string]IAMRequest{}}, nil
}

// Install adds the recorder to a client's middleware stack.
func (r *IAMRecorder) Install(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("testenv.recordIAM",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			r.Add(r.names.Requests(in.Parameters)...)
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// Add records requests made another way (an event source mapping's).
func (r *IAMRecorder) Add(reqs ...IAMRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range reqs {
		r.seen[q.String()] = q
	}
}

// Reset forgets what was recorded.
func (r *IAMRecorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = map[string]IAMRequest{}
}

// Requests returns what was recorded, sorted.
func (r *IAMRecorder) Requests() []IAMRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]IAMRequest, 0, len(r.seen))
	for _, k := range slices.Sorted(maps.Keys(r.seen)) {
		out = append(out, r.seen[k])
	}
	return out
}

// Requests maps one SDK operation's input to the IAM requests it makes.
func (n IAMNames) Requests(params any) []IAMRequest {
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		return []IAMRequest{n.item("GetItem", in.TableName, in.Key)}
	case *dynamodb.PutItemInput:
		return []IAMRequest{n.item("PutItem", in.TableName, in.Item)}
	case *dynamodb.UpdateItemInput:
		return []IAMRequest{n.item("UpdateItem", in.TableName, in.Key)}
	case *dynamodb.DeleteItemInput:
		return []IAMRequest{n.item("DeleteItem", in.TableName, in.Key)}
	case *dynamodb.QueryInput:
		return []IAMRequest{n.query(in)}
	case *dynamodb.ScanInput: // no key, so no dynamodb:LeadingKeys
		resource := n.table(in.TableName).ARN
		if in.IndexName != nil {
			resource += "/index/" + aws.ToString(in.IndexName)
		}
		return []IAMRequest{{Action: "dynamodb:Scan", Resource: resource}}
	case *dynamodb.BatchGetItemInput:
		var out []IAMRequest
		for _, table := range slices.Sorted(maps.Keys(in.RequestItems)) {
			out = append(out, n.items("BatchGetItem", table, in.RequestItems[table].Keys))
		}
		return out
	case *dynamodb.BatchWriteItemInput:
		var out []IAMRequest
		for _, table := range slices.Sorted(maps.Keys(in.RequestItems)) {
			var keys []map[string]ddbtypes.AttributeValue
			for _, w := range in.RequestItems[table] {
				switch {
				case w.PutRequest != nil:
					keys = append(keys, w.PutRequest.Item)
				case w.DeleteRequest != nil:
					keys = append(keys, w.DeleteRequest.Key)
				}
			}
			out = append(out, n.items("BatchWriteItem", table, keys))
		}
		return out
	case *dynamodb.TransactWriteItemsInput:
		// IAM has no action of its own for a transaction: each item needs
		// the action of its kind.
		var out []IAMRequest
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				out = append(out, n.item("PutItem", it.Put.TableName, it.Put.Item))
			case it.Update != nil:
				out = append(out, n.item("UpdateItem", it.Update.TableName, it.Update.Key))
			case it.Delete != nil:
				out = append(out, n.item("DeleteItem", it.Delete.TableName, it.Delete.Key))
			case it.ConditionCheck != nil:
				out = append(out, n.item("ConditionCheckItem", it.ConditionCheck.TableName, it.ConditionCheck.Key))
			}
		}
		return out
	case *dynamodb.TransactGetItemsInput:
		var out []IAMRequest
		for _, it := range in.TransactItems {
			if it.Get != nil {
				out = append(out, n.item("GetItem", it.Get.TableName, it.Get.Key))
			}
		}
		return out
	}
	if out, ok := n.s3Requests(params); ok {
		return out
	}
	if out, ok := n.sqsRequests(params); ok {
		return out
	}
	return []IAMRequest{{Action: fmt.Sprintf("unknown: %T (teach testenv.IAMNames.Requests)", params)}}
}

func (n IAMNames) table(name *string) IAMTable {
	if t, ok := n.Tables[aws.ToString(name)]; ok {
		return t
	}
	return IAMTable{ARN: "unknown table " + aws.ToString(name)}
}

func (n IAMNames) item(op string, table *string, key map[string]ddbtypes.AttributeValue) IAMRequest {
	return n.items(op, aws.ToString(table), []map[string]ddbtypes.AttributeValue{key})
}

// items is one request on table naming keys: dynamodb:LeadingKeys holds
// each key's partition key value.
func (n IAMNames) items(op, table string, keys []map[string]ddbtypes.AttributeValue) IAMRequest {
	t := n.table(&table)
	var leading []string
	for _, k := range keys {
		if v, ok := scalar(k[t.Hash]); ok && !slices.Contains(leading, v) {
			leading = append(leading, v)
		}
	}
	sort.Strings(leading)
	return IAMRequest{Action: "dynamodb:" + op, Resource: t.ARN, Context: map[string][]string{"dynamodb:LeadingKeys": leading}}
}

// query is a Query: on the table or on its index, with the partition key
// value its key condition names.
func (n IAMNames) query(in *dynamodb.QueryInput) IAMRequest {
	t := n.table(in.TableName)
	resource, hash := t.ARN, t.Hash
	if in.IndexName != nil {
		resource, hash = t.ARN+"/index/"+aws.ToString(in.IndexName), t.Indexes[aws.ToString(in.IndexName)]
	}
	var leading []string
	for _, part := range and.Split(aws.ToString(in.KeyConditionExpression), -1) {
		lhs, rhs, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		lhs, rhs = strings.TrimSpace(lhs), strings.TrimSpace(rhs)
		if name, ok := in.ExpressionAttributeNames[lhs]; ok {
			lhs = name
		}
		if lhs != hash {
			continue
		}
		if v, ok := scalar(in.ExpressionAttributeValues[rhs]); ok {
			leading = append(leading, v)
		}
	}
	return IAMRequest{Action: "dynamodb:Query", Resource: resource, Context: map[string][]string{"dynamodb:LeadingKeys": leading}}
}

// and separates a key condition's two parts.
var and = regexp.MustCompile(`(?i)\s+and\s+`)

func scalar(v ddbtypes.AttributeValue) (string, bool) {
	switch x := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return x.Value, true
	case *ddbtypes.AttributeValueMemberN:
		return x.Value, true
	}
	return "", false
}

func (n IAMNames) object(action string, bucket, key *string) IAMRequest {
	b := aws.ToString(bucket)
	arn, ok := n.Buckets[b]
	if !ok {
		arn = "unknown bucket " + b
	}
	return IAMRequest{Action: action, Resource: arn + "/" + aws.ToString(key)}
}

// versioned is the action on one version of an object when the request
// names a version.
func versioned(action string, version *string) string {
	if aws.ToString(version) != "" {
		return action + "Version"
	}
	return action
}

func (n IAMNames) s3Requests(params any) ([]IAMRequest, bool) {
	switch in := params.(type) {
	case *s3.PutObjectInput:
		return []IAMRequest{n.put(in)}, true
	case *s3.GetObjectInput:
		return []IAMRequest{n.object(versioned("s3:GetObject", in.VersionId), in.Bucket, in.Key)}, true
	case *s3.HeadObjectInput: // IAM has no action of its own for a HEAD
		return []IAMRequest{n.object(versioned("s3:GetObject", in.VersionId), in.Bucket, in.Key)}, true
	case *s3.DeleteObjectInput:
		return []IAMRequest{n.object(versioned("s3:DeleteObject", in.VersionId), in.Bucket, in.Key)}, true
	case *s3.DeleteObjectsInput:
		var out []IAMRequest
		if in.Delete != nil {
			for _, o := range in.Delete.Objects {
				out = append(out, n.object(versioned("s3:DeleteObject", o.VersionId), in.Bucket, o.Key))
			}
		}
		return out, true
	case *s3.ListObjectsV2Input:
		return []IAMRequest{n.listing("s3:ListBucket", in.Bucket, in.Prefix)}, true
	case *s3.ListObjectVersionsInput:
		return []IAMRequest{n.listing("s3:ListBucketVersions", in.Bucket, in.Prefix)}, true
	}
	return nil, false
}

// put is a PutObject with the condition keys a bucket policy that
// enforces conditional writes reads (AWS's S3 guide, "Enforce conditional
// writes on Amazon S3 buckets"): s3:ObjectCreationOperation, true for a
// PutObject (false only for a multipart upload's creation and parts), and
// s3:if-none-match when the request carries If-None-Match.
func (n IAMNames) put(in *s3.PutObjectInput) IAMRequest {
	r := n.object("s3:PutObject", in.Bucket, in.Key)
	r.Context = map[string][]string{"s3:ObjectCreationOperation": {"true"}}
	if v := aws.ToString(in.IfNoneMatch); v != "" {
		r.Context["s3:if-none-match"] = []string{v}
	}
	return r
}

func (n IAMNames) listing(action string, bucket, prefix *string) IAMRequest {
	r := n.object(action, bucket, nil)
	r.Resource = strings.TrimSuffix(r.Resource, "/")
	r.Context = map[string][]string{"s3:prefix": {aws.ToString(prefix)}}
	return r
}

func (n IAMNames) queue(action string, urlOrName *string) IAMRequest {
	arn, ok := n.Queues[aws.ToString(urlOrName)]
	if !ok {
		arn = "unknown queue " + aws.ToString(urlOrName)
	}
	return IAMRequest{Action: action, Resource: arn}
}

func (n IAMNames) sqsRequests(params any) ([]IAMRequest, bool) {
	switch in := params.(type) {
	case *sqs.SendMessageInput:
		return []IAMRequest{n.queue("sqs:SendMessage", in.QueueUrl)}, true
	case *sqs.SendMessageBatchInput: // IAM authorises a batch as its single action
		return []IAMRequest{n.queue("sqs:SendMessage", in.QueueUrl)}, true
	case *sqs.ReceiveMessageInput:
		return []IAMRequest{n.queue("sqs:ReceiveMessage", in.QueueUrl)}, true
	case *sqs.DeleteMessageInput:
		return []IAMRequest{n.queue("sqs:DeleteMessage", in.QueueUrl)}, true
	case *sqs.DeleteMessageBatchInput:
		return []IAMRequest{n.queue("sqs:DeleteMessage", in.QueueUrl)}, true
	case *sqs.ChangeMessageVisibilityInput:
		return []IAMRequest{n.queue("sqs:ChangeMessageVisibility", in.QueueUrl)}, true
	case *sqs.ChangeMessageVisibilityBatchInput:
		return []IAMRequest{n.queue("sqs:ChangeMessageVisibility", in.QueueUrl)}, true
	case *sqs.GetQueueAttributesInput:
		return []IAMRequest{n.queue("sqs:GetQueueAttributes", in.QueueUrl)}, true
	case *sqs.GetQueueUrlInput:
		return []IAMRequest{n.queue("sqs:GetQueueUrl", in.QueueName)}, true
	}
	return nil, false
}
