package localdeploy

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// conditionalTemplate has what template.yaml's switches use: conditions
// on parameters, Fn::If with AWS::NoValue, a mapping looked up by a
// parameter, a resource and an output that exist only under a condition,
// and a table whose deletion protection is on.
const conditionalTemplate = `
Parameters:
  Timeout: {Type: Number, Default: 6, AllowedValues: [3, 6]}
  KeyArn: {Type: String, Default: ""}
  Protection: {Type: String, Default: "true", AllowedValues: ["true", "false"]}
Mappings:
  Timeouts:
    "3": {Visibility: 18}
    "6": {Visibility: 36}
Conditions:
  UseKey: !Not [!Equals [!Ref KeyArn, ""]]
  NoKey: !Equals [!Ref KeyArn, ""]
Resources:
  Q:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: !FindInMap [Timeouts, !Ref Timeout, Visibility]
      KmsMasterKeyId: !If [UseKey, !Ref KeyArn, !Ref AWS::NoValue]
      SqsManagedSseEnabled: !If [UseKey, false, true]
  T:
    Type: AWS::DynamoDB::Table
    DeletionPolicy: Retain
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
      KeySchema: [{AttributeName: id, KeyType: HASH}]
      DeletionProtectionEnabled: !Ref Protection
  Topic:
    Type: AWS::SNS::Topic
    Condition: UseKey
Outputs:
  TopicArn:
    Condition: UseKey
    Value: !Ref Topic
  Table:
    Value: !Ref T
`

func TestResolveDecidesConditionsAndLooksUpMappings(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(conditionalTemplate))
	require.NoError(t, err)
	r := &resolver{tpl: tpl, stackName: "st", region: "eu-west-1", refs: map[string]string{}, attrs: map[string]map[string]string{}}
	got, err := r.resolve(tpl.Resources["Q"].Properties)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"VisibilityTimeout": 36, "SqsManagedSseEnabled": true}, got,
		"the mapping's value for the default timeout; the key's property dropped")

	tpl.Parameters["Timeout"] = samtemplate.Parameter{Type: "Number", Default: 3}
	tpl.Parameters["KeyArn"] = samtemplate.Parameter{Type: "String", Default: "arn:aws:kms:eu-west-1:000000000000:key/k"}
	got, err = r.resolve(tpl.Resources["Q"].Properties)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"VisibilityTimeout": 18, "SqsManagedSseEnabled": false, "KmsMasterKeyId": "arn:aws:kms:eu-west-1:000000000000:key/k"}, got)

	tpl.Parameters["Timeout"] = samtemplate.Parameter{Type: "Number", Default: 7}
	_, err = r.resolve(tpl.Resources["Q"].Properties)
	require.ErrorContains(t, err, `mapping Timeouts has no key "7"`)
	_, err = r.resolve(map[string]any{"Fn::FindInMap": []any{"Timeouts", "3"}})
	require.ErrorContains(t, err, "Fn::FindInMap needs [map, top-level key, second-level key]")
	got, err = r.resolve(map[string]any{"Ref": "AWS::NoValue"})
	require.NoError(t, err)
	require.Nil(t, got)
}

// fakeDynamo records the tables it is asked to create.
type fakeDynamo struct {
	dynamoAPI
	created []*dynamodb.CreateTableInput
}

func (f *fakeDynamo) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	f.created = append(f.created, in)
	return &dynamodb.CreateTableOutput{}, nil
}

func (f *fakeDynamo) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	c := f.created[len(f.created)-1]
	return &dynamodb.DescribeTableOutput{Table: &ddbtypes.TableDescription{
		TableName: in.TableName, TableArn: aws.String("arn:t"), KeySchema: c.KeySchema,
	}}, nil
}

// fakeSQS answers a queue's creation.
type fakeSQS struct {
	sqsAPI
	attrs map[string]string
}

func (f *fakeSQS) CreateQueue(_ context.Context, in *sqs.CreateQueueInput, _ ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error) {
	f.attrs = in.Attributes
	return &sqs.CreateQueueOutput{QueueUrl: aws.String("http://q")}, nil
}

func (f *fakeSQS) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"QueueArn": "arn:q"}}, nil
}

// A deployment creates what the parameters' defaults create, skips (and
// says so) a resource and an output whose condition is false, and turns a
// table's deletion protection off: a local stack is deleted with its
// tables.
func TestDeployHonoursConditionsAndTurnsDeletionProtectionOff(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(conditionalTemplate))
	require.NoError(t, err)
	ddb, q := &fakeDynamo{}, &fakeSQS{}
	res, err := Deploy(t.Context(), tpl, "st", "eu-west-1", Clients{DynamoDB: ddb, SQS: q})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"Q": "http://q", "T": "st-T"}, res.Resources)
	require.Equal(t, map[string]string{"Table": "st-T"}, res.Outputs)
	require.Contains(t, res.Skipped, "Topic (AWS::SNS::Topic): not created: its condition UseKey is false")
	require.Contains(t, res.Skipped, "output TopicArn: not given: its condition UseKey is false")
	require.Contains(t, res.Skipped, "T (AWS::DynamoDB::Table): DeletionProtectionEnabled off locally: a local stack's tables are deleted with it")
	require.Len(t, ddb.created, 1)
	require.False(t, aws.ToBool(ddb.created[0].DeletionProtectionEnabled))
	require.NotNil(t, ddb.created[0].DeletionProtectionEnabled, "off, explicitly")
	require.Equal(t, map[string]string{"VisibilityTimeout": "36", "SqsManagedSseEnabled": "true"}, q.attrs)

	// A part of the template: the queue alone, whose key's branch is not
	// taken, names no resource the part lacks.
	only := &samtemplate.Template{Parameters: tpl.Parameters, Conditions: tpl.Conditions, Mappings: tpl.Mappings,
		Resources: map[string]samtemplate.Resource{"Q": tpl.Resources["Q"]}}
	only.Resources["Q"].Properties["KmsMasterKeyId"] = map[string]any{"Fn::If": []any{"UseKey", map[string]any{"Fn::GetAtt": []any{"Key", "Arn"}}, map[string]any{"Ref": "AWS::NoValue"}}}
	_, err = Deploy(t.Context(), only, "st", "eu-west-1", Clients{SQS: &fakeSQS{}})
	require.NoError(t, err, "Key is named only by the branch not taken")
}

// A parameter's value must be one the template allows, as CloudFormation
// requires: the local deployer refuses it when a Ref reads it.
func TestResolveRefusesAParameterValueTheTemplateDoesNotAllow(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(`
Parameters:
  Timeout: {Type: Number, Default: 6, AllowedValues: [3, 6]}
  Size: {Type: Number, Default: 10, MinValue: 10, MaxValue: 20}
  Name: {Type: String, Default: a, AllowedValues: [a, b]}
Resources: {}
`))
	require.NoError(t, err)
	r := &resolver{tpl: tpl, stackName: "st", region: "eu-west-1", refs: map[string]string{}, attrs: map[string]map[string]string{}}
	for _, c := range []struct {
		param   string
		value   any
		problem string
	}{
		{"Timeout", 3, ""},
		{"Timeout", 7, "parameter Timeout: 7 is not one of its allowed values [3 6]"},
		{"Size", 10, ""},
		{"Size", 20, ""},
		{"Size", 9, "parameter Size: 9 is below its MinValue 10"},
		{"Size", 21, "parameter Size: 21 is above its MaxValue 20"},
		{"Size", "ten", "parameter Size: ten is not a number"},
		{"Name", "b", ""},
		{"Name", "c", "parameter Name: c is not one of its allowed values [a b]"},
	} {
		p := tpl.Parameters[c.param]
		p.Default = c.value
		tpl.Parameters[c.param] = p
		got, err := r.resolve(map[string]any{"Ref": c.param})
		if c.problem == "" {
			require.NoError(t, err, "%s = %v", c.param, c.value)
			require.Equal(t, fmt.Sprint(c.value), got)
			continue
		}
		require.EqualError(t, err, c.problem)
	}
}
