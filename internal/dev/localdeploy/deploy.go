package localdeploy

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

type sqsAPI interface {
	CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	SetQueueAttributes(ctx context.Context, in *sqs.SetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

type dynamoAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

type s3API interface {
	CreateBucket(ctx context.Context, in *s3.CreateBucketInput, optFns ...func(*s3.Options)) (*s3.CreateBucketOutput, error)
	HeadBucket(ctx context.Context, in *s3.HeadBucketInput, optFns ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
	PutBucketVersioning(ctx context.Context, in *s3.PutBucketVersioningInput, optFns ...func(*s3.Options)) (*s3.PutBucketVersioningOutput, error)
}

var (
	_ sqsAPI    = (*sqs.Client)(nil)
	_ dynamoAPI = (*dynamodb.Client)(nil)
	_ s3API     = (*s3.Client)(nil)
)

// Clients are the service clients Deploy uses.
type Clients struct {
	SQS      sqsAPI
	DynamoDB dynamoAPI
	S3       s3API
	// KafkaBootstrapServers are the local Kafka broker's host:port,
	// comma-separated (localstack.State.Kafka), needed by a template that
	// reads Kafka topics (template-kafka.yaml): its topics are created
	// there, and it is the template's brokers. Default none.
	KafkaBootstrapServers string
	// Postgres is the local stack's PostgreSQL database
	// (FIFOWORKER_POSTGRES_DSN), needed by a template with a database
	// schema (template-postgres.yaml's Custom::FifoworkerSchema): its
	// migrations are applied there, as the stack's MigrateFunction applies
	// them to the cluster. Default none: the schema is skipped.
	Postgres *sql.DB
}

// Result is what a deployment made.
type Result struct {
	// Resources maps each created logical id to its Ref value (queue URL,
	// table name, bucket name).
	Resources map[string]string
	// Attributes maps logical ids to their Fn::GetAtt values (Arn, StreamArn...).
	Attributes map[string]map[string]string
	// Outputs are the template's outputs, resolved.
	Outputs map[string]string
	// Parameters are the values the deployment gave parameters instead of
	// their defaults: the local broker as KafkaBootstrapServers, and an
	// ARN of its own for it as an empty MskClusterArn (LocalMSKClusterARN).
	Parameters map[string]string
	// Topics are the Kafka topics the deployment created or found on the
	// local broker: each one a Kafka mapping reads.
	Topics []string
	// Skipped lists what was not created or not applied locally, and why.
	Skipped []string
	// Created lists the logical ids of what was created or found, in
	// creation order, with their types: what a test's teardown deletes
	// (testenv.Teardown).
	Created []Created
}

// Created is one resource a deployment made or found.
type Created struct {
	LogicalID, Type, Ref string
}

// Deploy creates the template's resources for stack stackName in region.
func Deploy(ctx context.Context, tpl *samtemplate.Template, stackName, region string, c Clients) (*Result, error) {
	params, err := localParameters(tpl, c, stackName, region)
	if err != nil {
		return nil, err
	}
	r := &resolver{tpl: tpl, stackName: stackName, region: region, refs: map[string]string{}, attrs: map[string]map[string]string{}, params: params}
	res := &Result{Resources: r.refs, Attributes: r.attrs, Outputs: map[string]string{}, Parameters: params}
	topics := &topicMaker{brokers: c.KafkaBootstrapServers}
	defer topics.close()
	names, err := order(chosenResources(tpl, r))
	if err != nil {
		return nil, fmt.Errorf("localdeploy: %w", err)
	}
	for _, name := range names {
		rsc := tpl.Resources[name]
		create, err := tpl.Exists(name, r.ref)
		if err != nil {
			return nil, fmt.Errorf("localdeploy: %s (%s): %w", name, rsc.Type, err)
		}
		if !create {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s (%s): not created: its condition %v is false", name, rsc.Type, rsc.Attributes["Condition"]))
			continue
		}
		var skipped []string
		switch rsc.Type {
		case "AWS::SQS::Queue":
			skipped, err = deployQueue(ctx, r, name, rsc, c.SQS)
		case "AWS::DynamoDB::Table":
			skipped, err = deployTable(ctx, r, name, rsc, c.DynamoDB)
		case "AWS::S3::Bucket":
			skipped, err = deployBucket(ctx, r, name, rsc, c.S3)
		case "AWS::Serverless::Function":
			skipped = []string{"not deployed: functions run under pkg/localesm"}
		case schemaType:
			skipped, err = deploySchema(ctx, c.Postgres)
		case "AWS::Lambda::EventSourceMapping":
			var made []string
			made, skipped, err = deployMapping(ctx, r, rsc, topics)
			for _, t := range made {
				if !slices.Contains(res.Topics, t) {
					res.Topics = append(res.Topics, t)
				}
			}
		default:
			skipped = []string{notEmulated(rsc.Type)}
		}
		if err != nil {
			return nil, fmt.Errorf("localdeploy: %s (%s): %w", name, rsc.Type, err)
		}
		if ref, ok := r.refs[name]; ok {
			res.Created = append(res.Created, Created{LogicalID: name, Type: rsc.Type, Ref: ref})
		}
		for _, s := range skipped {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s (%s): %s", name, rsc.Type, s))
		}
	}
	for name, out := range tpl.Outputs {
		om, _ := out.(map[string]any)
		if c, ok := om["Condition"].(string); ok {
			holds, err := tpl.Holds(c, r.ref)
			if err != nil {
				return nil, fmt.Errorf("localdeploy: output %s: %w", name, err)
			}
			if !holds {
				res.Skipped = append(res.Skipped, fmt.Sprintf("output %s: not given: its condition %s is false", name, c))
				continue
			}
		}
		if missing := notCreated(om["Value"], tpl.Resources, r.refs); missing != "" {
			res.Skipped = append(res.Skipped, fmt.Sprintf("output %s: refers to %s, which is not deployed locally", name, missing))
			continue
		}
		v, err := r.resolve(om["Value"])
		if err != nil {
			return nil, fmt.Errorf("localdeploy: output %s: %w", name, err)
		}
		res.Outputs[name] = fmt.Sprint(v)
	}
	return res, nil
}

// chosenResources are tpl's resources with each Fn::If decided, so that a
// resource a branch not taken names (a key that is off) is no dependency.
// A property Choose cannot decide is left whole; resolving it says why.
func chosenResources(tpl *samtemplate.Template, r *resolver) map[string]samtemplate.Resource {
	out := make(map[string]samtemplate.Resource, len(tpl.Resources))
	for name, rsc := range tpl.Resources {
		if props, present, err := tpl.Choose(rsc.Properties, r.ref); err == nil && present {
			rsc.Properties, _ = props.(map[string]any)
		}
		out[name] = rsc
	}
	return out
}

// notCreated names a resource v refers to that this deployment did not
// create (an API or a function), or returns "".
func notCreated(v any, resources map[string]samtemplate.Resource, created map[string]string) string {
	deps := map[string]bool{}
	dependencies(v, resources, deps)
	names := make([]string, 0, len(deps))
	for d := range deps {
		if _, ok := created[d]; !ok {
			names = append(names, d)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func (r *resolver) props(rsc samtemplate.Resource) (map[string]any, error) {
	v, err := r.resolve(rsc.Properties)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// physicalName is the declared name, or <stack>-<LogicalId> made valid.
func physicalName(declared any, stack, logical string, lower bool, suffix string) string {
	if s, ok := declared.(string); ok && s != "" {
		return s
	}
	n := stack + "-" + logical
	if lower {
		n = strings.ToLower(n)
	}
	return n + suffix
}

// queueAttributeProps are the CloudFormation properties that are SQS queue
// attributes of the same name.
var queueAttributeProps = []string{
	"ContentBasedDeduplication", "DeduplicationScope", "DelaySeconds", "FifoThroughputLimit",
	"KmsDataKeyReusePeriodSeconds", "KmsMasterKeyId", "MaximumMessageSize", "MessageRetentionPeriod",
	"ReceiveMessageWaitTimeSeconds", "SqsManagedSseEnabled", "VisibilityTimeout",
}

func deployQueue(ctx context.Context, r *resolver, logical string, rsc samtemplate.Resource, api sqsAPI) ([]string, error) {
	p, err := r.props(rsc)
	if err != nil {
		return nil, err
	}
	fifo := p["FifoQueue"] == true
	suffix := ""
	if fifo {
		suffix = ".fifo"
	}
	name := physicalName(p["QueueName"], r.stackName, logical, false, suffix)
	attrs := map[string]string{}
	for _, k := range queueAttributeProps {
		if v, ok := p[k]; ok {
			attrs[k] = fmt.Sprint(v)
		}
	}
	for _, k := range []string{"RedrivePolicy", "RedriveAllowPolicy"} {
		if v, ok := p[k]; ok {
			raw, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			attrs[k] = string(raw)
		}
	}
	create := map[string]string{}
	for k, v := range attrs {
		create[k] = v
	}
	if fifo {
		create["FifoQueue"] = "true"
	}
	var url string
	out, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: create})
	var exists *sqstypes.QueueNameExists
	switch {
	case err == nil:
		url = aws.ToString(out.QueueUrl)
	case errors.As(err, &exists):
		// Created earlier with other attributes: converge them.
		got, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			return nil, err
		}
		url = aws.ToString(got.QueueUrl)
		if _, err := api.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	ga, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return nil, err
	}
	r.refs[logical] = url
	r.attrs[logical] = map[string]string{"Arn": ga.Attributes["QueueArn"], "QueueName": name, "QueueUrl": url}
	return skippedProps(p, "Tags"), nil
}

func skippedProps(p map[string]any, names ...string) []string {
	var out []string
	for _, n := range names {
		if _, ok := p[n]; ok {
			out = append(out, n+" not applied locally")
		}
	}
	return out
}

// asList decodes a resolved property into a slice of T via JSON.
func decode(v any, into any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}

type keyElem struct{ AttributeName, KeyType string }

type projection struct {
	ProjectionType   string
	NonKeyAttributes []string
}

type index struct {
	IndexName  string
	KeySchema  []keyElem
	Projection projection
}

func keySchema(ks []keyElem) []ddbtypes.KeySchemaElement {
	out := make([]ddbtypes.KeySchemaElement, len(ks))
	for i, k := range ks {
		out[i] = ddbtypes.KeySchemaElement{AttributeName: aws.String(k.AttributeName), KeyType: ddbtypes.KeyType(k.KeyType)}
	}
	return out
}

func (p projection) sdk() *ddbtypes.Projection {
	out := &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionType(p.ProjectionType)}
	if len(p.NonKeyAttributes) > 0 {
		out.NonKeyAttributes = p.NonKeyAttributes
	}
	return out
}

func deployTable(ctx context.Context, r *resolver, logical string, rsc samtemplate.Resource, api dynamoAPI) ([]string, error) {
	p, err := r.props(rsc)
	if err != nil {
		return nil, err
	}
	name := physicalName(p["TableName"], r.stackName, logical, false, "")
	var spec struct {
		AttributeDefinitions    []struct{ AttributeName, AttributeType string }
		KeySchema               []keyElem
		BillingMode             string
		StreamSpecification     *struct{ StreamViewType string }
		GlobalSecondaryIndexes  []index
		LocalSecondaryIndexes   []index
		TimeToLiveSpecification *struct {
			AttributeName string
			Enabled       bool
		}
	}
	if err := decode(p, &spec); err != nil {
		return nil, err
	}
	// Deletion protection stays off whatever the template says: a local
	// stack is torn down with its tables (a test's teardown, local down).
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), KeySchema: keySchema(spec.KeySchema), DeletionProtectionEnabled: aws.Bool(false)}
	for _, a := range spec.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{
			AttributeName: aws.String(a.AttributeName), AttributeType: ddbtypes.ScalarAttributeType(a.AttributeType)})
	}
	in.BillingMode = ddbtypes.BillingModePayPerRequest
	if spec.BillingMode == "PROVISIONED" {
		return nil, errors.New("PROVISIONED tables are not supported by the local deployer; use PAY_PER_REQUEST")
	}
	if spec.StreamSpecification != nil {
		in.StreamSpecification = &ddbtypes.StreamSpecification{
			StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewType(spec.StreamSpecification.StreamViewType)}
	}
	for _, g := range spec.GlobalSecondaryIndexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, ddbtypes.GlobalSecondaryIndex{
			IndexName: aws.String(g.IndexName), KeySchema: keySchema(g.KeySchema), Projection: g.Projection.sdk()})
	}
	for _, l := range spec.LocalSecondaryIndexes {
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, ddbtypes.LocalSecondaryIndex{
			IndexName: aws.String(l.IndexName), KeySchema: keySchema(l.KeySchema), Projection: l.Projection.sdk()})
	}
	_, err = api.CreateTable(ctx, in)
	var inUse *ddbtypes.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return nil, err
	}
	desc, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return nil, err
	}
	if err := sameTable(desc.Table, in); err != nil {
		return nil, fmt.Errorf("table %s exists with %w: delete it or deploy under another stack name", name, err)
	}
	if spec.TimeToLiveSpecification != nil && spec.TimeToLiveSpecification.Enabled {
		ttl, err := api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
		if err != nil {
			return nil, err
		}
		d := ttl.TimeToLiveDescription
		on := d != nil && d.TimeToLiveStatus == ddbtypes.TimeToLiveStatusEnabled
		if !on || aws.ToString(d.AttributeName) != spec.TimeToLiveSpecification.AttributeName {
			if _, err := api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
				TableName: aws.String(name),
				TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{
					AttributeName: aws.String(spec.TimeToLiveSpecification.AttributeName), Enabled: aws.Bool(true)},
			}); err != nil {
				return nil, err
			}
		}
	}
	r.refs[logical] = name
	r.attrs[logical] = map[string]string{"Arn": aws.ToString(desc.Table.TableArn), "StreamArn": aws.ToString(desc.Table.LatestStreamArn)}
	skipped := skippedProps(p, "SSESpecification", "PointInTimeRecoverySpecification", "Tags")
	if _, ok := p["DeletionProtectionEnabled"]; ok {
		skipped = append(skipped, "DeletionProtectionEnabled off locally: a local stack's tables are deleted with it")
	}
	return skipped, nil
}

// sameTable checks that an existing table is the one the template declares:
// key schema, stream and index names. (A table's key and stream cannot be
// converged in place the way queue attributes can.)
func sameTable(got *ddbtypes.TableDescription, want *dynamodb.CreateTableInput) error {
	if g, w := fmt.Sprint(keyStrings(got.KeySchema)), fmt.Sprint(keyStrings(want.KeySchema)); g != w {
		return fmt.Errorf("another key schema (it has %s, the template says %s)", g, w)
	}
	gotStream, wantStream := "none", "none"
	if s := got.StreamSpecification; s != nil && aws.ToBool(s.StreamEnabled) {
		gotStream = string(s.StreamViewType)
	}
	if s := want.StreamSpecification; s != nil {
		wantStream = string(s.StreamViewType)
	}
	if gotStream != wantStream {
		return fmt.Errorf("another stream (it has %s, the template says %s)", gotStream, wantStream)
	}
	var gotIdx, wantIdx []string
	for _, g := range got.GlobalSecondaryIndexes {
		gotIdx = append(gotIdx, aws.ToString(g.IndexName))
	}
	for _, g := range want.GlobalSecondaryIndexes {
		wantIdx = append(wantIdx, aws.ToString(g.IndexName))
	}
	sort.Strings(gotIdx)
	sort.Strings(wantIdx)
	if fmt.Sprint(gotIdx) != fmt.Sprint(wantIdx) {
		return fmt.Errorf("other global secondary indexes (it has %v, the template says %v)", gotIdx, wantIdx)
	}
	return nil
}

func keyStrings(ks []ddbtypes.KeySchemaElement) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = aws.ToString(k.AttributeName) + ":" + string(k.KeyType)
	}
	sort.Strings(out)
	return out
}

var bucketUnsafe = regexp.MustCompile(`[^a-z0-9.-]+`)

func deployBucket(ctx context.Context, r *resolver, logical string, rsc samtemplate.Resource, api s3API) ([]string, error) {
	p, err := r.props(rsc)
	if err != nil {
		return nil, err
	}
	name := physicalName(p["BucketName"], r.stackName, logical, true, "")
	name = bucketUnsafe.ReplaceAllString(name, "-")
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	_, err = api.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)})
	var notFound *s3types.NotFound
	switch {
	case err == nil: // ours from an earlier run
	case errors.As(err, &notFound):
		in := &s3.CreateBucketInput{Bucket: aws.String(name)}
		if r.region != "us-east-1" { // S3 refuses a location constraint of us-east-1 and requires one elsewhere
			in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(r.region)}
		}
		if _, err := api.CreateBucket(ctx, in); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("bucket %s: %w", name, err)
	}
	// Versioning is behaviour, not protection: intake pins its download
	// URLs to versions, so the local bucket keeps them as the template's
	// does (gofakes3 versions a bucket on request).
	if v, _ := p["VersioningConfiguration"].(map[string]any); v["Status"] == "Enabled" {
		if _, err := api.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
			return nil, fmt.Errorf("bucket %s: versioning: %w", name, err)
		}
	}
	r.refs[logical] = name
	r.attrs[logical] = map[string]string{
		"Arn":        "arn:aws:s3:::" + name,
		"DomainName": name + ".s3.amazonaws.com",
	}
	return skippedProps(p, "PublicAccessBlockConfiguration", "BucketEncryption", "OwnershipControls",
		"LifecycleConfiguration", "Tags"), nil
}
