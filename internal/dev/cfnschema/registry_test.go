package cfnschema_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/cfnschema"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// loadRepoTemplate parses the repository's template.yaml.
func loadRepoTemplate(t *testing.T) *samtemplate.Template {
	t.Helper()
	return loadTemplate(t, "template.yaml")
}

// loadTemplate parses one of the repository's templates, by its name at
// the repository's root.
func loadTemplate(t *testing.T, name string) *samtemplate.Template {
	t.Helper()
	tpl, err := samtemplate.Load("../../../" + name)
	require.NoError(t, err)
	return tpl
}

// rainModule is the module whose files hold the CloudFormation registry
// schemas; go.mod pins its version (pin_test.go keeps it there).
const rainModule = "github.com/aws-cloudformation/rain"

var (
	schemasOnce sync.Once
	schemasDir  string
	schemasErr  error
)

// registrySchemas opens the registry schemas of the version of rainModule
// that go.mod requires, downloading it into the module cache if it is not
// there yet (go verifies it against go.sum).
func registrySchemas(t *testing.T) *cfnschema.Registry {
	t.Helper()
	schemasOnce.Do(func() {
		out, err := exec.Command("go", "mod", "download", "-json", rainModule).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				err = &downloadError{err: ee, stderr: string(ee.Stderr), stdout: string(out)}
			}
			schemasErr = err
			return
		}
		var mod struct{ Dir, Version, Error string }
		if err := json.Unmarshal(out, &mod); err != nil {
			schemasErr = err
			return
		}
		if mod.Error != "" || mod.Dir == "" {
			schemasErr = &downloadError{stdout: string(out)}
			return
		}
		schemasDir = filepath.Join(mod.Dir, "internal", "aws", "cfn", "schemas")
	})
	require.NoError(t, schemasErr, "the registry schemas come from %s, as go.mod pins it", rainModule)
	r, err := cfnschema.NewRegistry(cfnschema.RegistryConfig{Dir: schemasDir})
	require.NoError(t, err)
	return r
}

// NewRegistry refuses a Dir that is not a directory, naming it: a wrong
// path would otherwise read as every type's schema missing.
func TestNewRegistryRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "queue.json")
	require.NoError(t, os.WriteFile(file, []byte("{}"), 0o600))
	for name, dir := range map[string]string{
		"empty":     "",
		"missing":   filepath.Join(t.TempDir(), "no-such-dir"),
		"not a dir": file,
	} {
		r, err := cfnschema.NewRegistry(cfnschema.RegistryConfig{Dir: dir})
		require.ErrorIs(t, err, cfnschema.ErrInvalidConfig, name)
		require.ErrorContains(t, err, "Dir", name)
		require.Nil(t, r, name)
	}
	r, err := cfnschema.NewRegistry(cfnschema.RegistryConfig{Dir: t.TempDir()})
	require.NoError(t, err)
	require.NotNil(t, r)
}

type downloadError struct {
	err            error
	stderr, stdout string
}

func (e *downloadError) Error() string {
	return "go mod download " + rainModule + ": " + strings.TrimSpace(e.stderr+" "+e.stdout)
}

// TestRepoTemplateMatchesTheRegistrySchemas: every plain CloudFormation
// resource of template.yaml has only properties its type's registry schema
// knows, of the right types and values, and all the properties the schema
// requires; every SAM function too, as the Lambda function SAM makes of
// it, and each of its SQS and DynamoDB events as an event source mapping;
// every reference names something the template has. The log lists what
// stays unchecked.
func TestRepoTemplateMatchesTheRegistrySchemas(t *testing.T) {
	t.Parallel()
	requireMatchesRegistrySchemas(t, loadRepoTemplate(t))
}

// requireMatchesRegistrySchemas is TestRepoTemplateMatchesTheRegistrySchemas
// for the template tpl.
func requireMatchesRegistrySchemas(t *testing.T, tpl *samtemplate.Template) {
	t.Helper()
	res := cfnschema.Check(tpl, registrySchemas(t))
	for _, err := range res.Problems {
		t.Error(err)
	}
	want := 0
	for _, r := range tpl.Resources {
		if r.Type == "AWS::Serverless::Function" || !strings.HasPrefix(r.Type, "AWS::Serverless::") {
			want++
		}
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		events, _ := r.Properties["Events"].(map[string]any)
		for _, e := range events {
			if typ := e.(map[string]any)["Type"]; typ == "SQS" || typ == "DynamoDB" {
				want++
			}
		}
	}
	require.Len(t, res.Checked, want, "every plain resource, SAM function and SQS or DynamoDB event is checked; skipped: %v", res.Skipped)
	for _, s := range res.Skipped {
		require.Contains(t, s, "AWS::Serverless::", "only SAM's resources are skipped")
		t.Log("skipped:", s)
	}
	for _, s := range res.Unchecked {
		t.Log("not checked:", s)
	}
	t.Log("not checked anywhere: Fn::FindInMap's map names, Rules (a value they refuse is left unchecked), Outputs' value types, circular dependencies, " +
		"CreationPolicy and UpdatePolicy contents, whether a type supports DeletionPolicy Snapshot, " +
		"Fn::GetAtt attribute names of types without handlers (and of writable properties, which pass), " +
		"what Fn::Select and Fn::FindInMap give, " +
		"and the roles, permissions and other resources SAM generates (a function's Role, Policies, HttpApi routes)")
}

// brokenTemplate is a small template with one resource of each kind the
// cases below break.
const brokenTemplate = `
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Runtime: provided.al2023
    Handler: bootstrap
    Architectures: [arm64]
    Timeout: 30
    Environment:
      Variables:
        TABLE: !Ref Table
Parameters:
  Retention:
    Type: Number
    Default: 30
    AllowedValues: [7, 30]
  Visibility:
    Type: Number
    Default: 60
    MinValue: 10
    MaxValue: 600
  Recovery:
    Type: Number
    Default: 7
    MinValue: 1
    MaxValue: 35
  Topics:
    Type: CommaDelimitedList
    Default: arn:aws:sns:eu-west-1:123456789012:a,arn:aws:sns:eu-west-1:123456789012:b
Conditions:
  Big: !Equals [!Ref Visibility, 600]
Resources:
  Queue:
    Type: AWS::SQS::Queue
    DependsOn: Dlq
    Properties:
      FifoQueue: true
      QueueName: !Sub "${AWS::StackName}-q.fifo"
      VisibilityTimeout: !Ref Visibility
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt Dlq.Arn
        maxReceiveCount: 5
  Dlq:
    Type: AWS::SQS::Queue
    Properties:
      FifoQueue: "true"
      MessageRetentionPeriod: !If [Big, 1209600, !Ref AWS::NoValue]
  Plain:
    Type: AWS::SQS::Queue
  Table:
    Type: AWS::DynamoDB::Table
    DeletionPolicy: Retain
    UpdateReplacePolicy: Retain
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{ AttributeName: id, AttributeType: S }]
      KeySchema: [{ AttributeName: id, KeyType: HASH }]
      StreamSpecification: { StreamViewType: NEW_AND_OLD_IMAGES }
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true, RecoveryPeriodInDays: !Ref Recovery }
      Tags: !If [Big, [{ Key: size, Value: big }], !Ref AWS::NoValue]
  History:
    Type: AWS::DynamoDB::Table
    Properties:
      AttributeDefinitions: [{ AttributeName: pk, AttributeType: S }]
      KeySchema: [{ AttributeName: pk, KeyType: HASH }]
      BillingMode: PAY_PER_REQUEST
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true, RecoveryPeriodInDays: 35 }
  Logs:
    Type: AWS::Logs::LogGroup
    Properties:
      LogGroupName: !Join ["/", ["", aws, lambda, !Ref AWS::StackName]]
      RetentionInDays: !Ref Retention
      LogGroupClass: STANDARD
  MoreLogs:
    Type: AWS::Logs::LogGroup
    Condition: Big
    Properties:
      LogGroupName: /aws/lambda/more
      RetentionInDays: 14
  Alarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      AlarmDescription: !Sub "${!Literal} in ${AWS::Region}"
      Namespace: AWS/SQS
      MetricName: ApproximateNumberOfMessagesVisible
      Dimensions: [{ Name: QueueName, Value: !GetAtt Dlq.QueueName }]
      Statistic: Maximum
      Period: 60
      EvaluationPeriods: 1
      Threshold: 0
      ComparisonOperator: GreaterThanThreshold
      AlarmActions: !If [Big, [!Ref AWS::NoValue], []]
      OKActions: !Ref Topics
  Role:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Version: "2012-10-17"
        Statement: [{ Effect: Allow, Principal: { Service: lambda.amazonaws.com }, Action: sts:AssumeRole }]
      Policies:
        - PolicyName: read
          PolicyDocument:
            Version: "2012-10-17"
            Statement: [{ Effect: Allow, Action: dynamodb:GetItem, Resource: !GetAtt Table.Arn }]
  Function:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/f/
      Role: !GetAtt Role.Arn
      MemorySize: 256
      LoggingConfig: { LogGroup: !Ref Logs, LogFormat: JSON }
      Events:
        Commands:
          Type: SQS
          Properties:
            Queue: !GetAtt Queue.Arn
            BatchSize: 10
            FunctionResponseTypes: [ReportBatchItemFailures]
            ScalingConfig: { MaximumConcurrency: 5 }
        Standard:
          Type: SQS
          Properties:
            Queue: !GetAtt Plain.Arn
            BatchSize: 10
        Changes:
          Type: DynamoDB
          Properties:
            Stream: !GetAtt Table.StreamArn
            StartingPosition: TRIM_HORIZON
            BatchSize: 100
            BisectBatchOnFunctionError: true
            MaximumRetryAttempts: 20
            DestinationConfig: { OnFailure: { Type: SQS, Destination: !GetAtt Plain.Arn } }
        Api:
          Type: HttpApi
          Properties:
            ApiId: !Ref Api
  Api:
    Type: AWS::Serverless::HttpApi
Outputs:
  QueueUrl:
    Value: !Ref Queue
  LogsArn:
    Condition: Big
    Value: !GetAtt Logs.Arn
`

func checkTemplate(t *testing.T, src string) cfnschema.Result {
	t.Helper()
	tpl, err := samtemplate.Parse([]byte(src))
	require.NoError(t, err)
	return cfnschema.Check(tpl, registrySchemas(t))
}

// TestRegistryCheckAcceptsIntrinsicsWhereverAValueIs: the small template
// above, unbroken, passes: !Ref, !GetAtt, !Sub, !Join and !If stand for
// scalars, lists and objects, a list parameter's Ref for a list, ${!X} for
// no variable, and "true" for a boolean; the SAM function,
// with Globals, and its SQS and DynamoDB events are checked, its HttpApi
// event and the HttpApi not.
func TestRegistryCheckAcceptsIntrinsicsWhereverAValueIs(t *testing.T) {
	t.Parallel()
	res := checkTemplate(t, brokenTemplate)
	require.Empty(t, res.Problems)
	require.Equal(t, []string{"Alarm", "Dlq", "Function", "Function.Events.Changes", "Function.Events.Commands", "Function.Events.Standard",
		"History", "Logs", "MoreLogs", "Plain", "Queue", "Role", "Table"}, res.Checked)
	require.Equal(t, []string{"Api (AWS::Serverless::HttpApi): a SAM resource, transformed before CloudFormation sees it"}, res.Skipped)
	require.Equal(t, []string{"Function (AWS::Serverless::Function): CodeUri (what it points to), Events.Api (a HttpApi event)"}, res.Unchecked)
}

// TestRegistryCheckRejectsBrokenTemplates: each case breaks the small
// template in one place, and the check names that place.
func TestRegistryCheckRejectsBrokenTemplates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, old, new, want string
	}{
		{"unknown property", "      FifoQueue: true\n", "      FifoQueue: true\n      FifoQueueu: true\n",
			"Resources.Queue (AWS::SQS::Queue).Properties.FifoQueueu: unknown property"},
		{"unknown nested property", "{ AttributeName: id, KeyType: HASH }", "{ AttributeName: id, KeyType: HASH, Order: 1 }",
			"Properties.KeySchema[0].Order: unknown property"},
		{"wrong type", "      Period: 60\n", "      Period: every minute\n",
			`Properties.Period: "every minute" is not of type integer`},
		{"wrong type for a boolean", "      FifoQueue: \"true\"\n", "      FifoQueue: \"yes\"\n",
			`Properties.FifoQueue: "yes" is not of type boolean`},
		{"object for a list", "      AttributeDefinitions: [{ AttributeName: id, AttributeType: S }]\n", "      AttributeDefinitions: { AttributeName: id, AttributeType: S }\n",
			"Properties.AttributeDefinitions: an object is not of type array"},
		{"missing required property", "      ComparisonOperator: GreaterThanThreshold\n", "",
			"Resources.Alarm (AWS::CloudWatch::Alarm).Properties: missing required property ComparisonOperator"},
		{"missing required nested property", "{ AttributeName: id, KeyType: HASH }", "{ AttributeName: id }",
			"Properties.KeySchema[0]: missing required property KeyType"},
		{"value not in the enum", "LogGroupClass: STANDARD", "LogGroupClass: ARCHIVE",
			`Properties.LogGroupClass: "ARCHIVE" is not one of [STANDARD, INFREQUENT_ACCESS, DELIVERY]`},
		{"number not in the enum", "RetentionInDays: 14", "RetentionInDays: 15",
			"Resources.MoreLogs (AWS::Logs::LogGroup).Properties.RetentionInDays: 15 is not one of [1, 3, 5, 7, 14,"},
		{"number above the maximum", "RecoveryPeriodInDays: 35 }", "RecoveryPeriodInDays: 36 }",
			"Resources.History (AWS::DynamoDB::Table).Properties.PointInTimeRecoverySpecification.RecoveryPeriodInDays: 36 is above the maximum 35"},
		{"string not matching the pattern", "LogGroupName: /aws/lambda/more", "LogGroupName: /aws/lambda/more logs",
			`Properties.LogGroupName: "/aws/lambda/more logs" does not match`},
		{"read-only property", "      FifoQueue: true\n", "      FifoQueue: true\n      Arn: arn:aws:sqs:eu-west-1:1:q.fifo\n",
			"Properties.Arn: is read-only"},
		{"a Fn::If branch of the wrong type", "!If [Big, 1209600, !Ref AWS::NoValue]", "!If [Big, two weeks, !Ref AWS::NoValue]",
			`Properties.MessageRetentionPeriod(Fn::If branch 1): "two weeks" is not of type integer`},
		{"a parameter value outside the enum", "AllowedValues: [7, 30]", "AllowedValues: [7, 30, 31]",
			"Properties.RetentionInDays: Ref Retention: the parameter's allowed value 31"},
		{"a parameter bound outside the range", "MaxValue: 35", "MaxValue: 40",
			"Properties.PointInTimeRecoverySpecification.RecoveryPeriodInDays: Ref Recovery: the parameter's MaxValue 40"},
		{"unknown resource type", "  Logs:\n    Type: AWS::Logs::LogGroup\n", "  Logs:\n    Type: AWS::Logs::LogGrup\n",
			"Resources.Logs (AWS::Logs::LogGrup).Type: cfnschema: no registry schema for AWS::Logs::LogGrup"},

		// References: a Ref, Fn::GetAtt, Fn::Sub variable, Fn::If or
		// Condition names something the template has.
		{"a Ref to nothing", "VisibilityTimeout: !Ref Visibility", "VisibilityTimeout: !Ref NoSuchThing",
			"Resources.Queue (AWS::SQS::Queue).Properties.VisibilityTimeout: Ref NoSuchThing names no parameter, resource or pseudo parameter"},
		{"a Ref to a misspelt pseudo parameter", "AlarmActions: !If [Big, [!Ref AWS::NoValue], []]", "AlarmActions: !If [Big, [!Ref AWS::NoValu], []]",
			"Properties.AlarmActions(Fn::If branch 1)[0]: Ref AWS::NoValu names no parameter"},
		{"a Fn::GetAtt of nothing", "deadLetterTargetArn: !GetAtt Dlq.Arn", "deadLetterTargetArn: !GetAtt Dlqq.Arn",
			"Properties.RedrivePolicy.deadLetterTargetArn: Fn::GetAtt Dlqq.Arn names no resource"},
		{"a Fn::GetAtt of a parameter", "deadLetterTargetArn: !GetAtt Dlq.Arn", "deadLetterTargetArn: !GetAtt Visibility.Arn",
			"Fn::GetAtt Visibility.Arn names a parameter: Fn::GetAtt takes a resource"},
		{"a Fn::GetAtt of an attribute the type lacks", "deadLetterTargetArn: !GetAtt Dlq.Arn", "deadLetterTargetArn: !GetAtt Dlq.QueueArn",
			"Fn::GetAtt Dlq.QueueArn: Dlq (AWS::SQS::Queue) has no attribute QueueArn"},
		{"a Fn::Sub variable naming nothing", `!Sub "${AWS::StackName}-q.fifo"`, `!Sub "${AWS::StackNam}-q.fifo"`,
			"Properties.QueueName: Fn::Sub ${AWS::StackNam} names no parameter, resource or pseudo parameter"},
		{"a Fn::Sub attribute of nothing", "Resource: !GetAtt Table.Arn", `Resource: !Sub "${Tabel.Arn}/index/*"`,
			"Fn::Sub ${Tabel.Arn} names no resource"},
		{"a Fn::If of no condition", "!If [Big, 1209600, !Ref AWS::NoValue]", "!If [Bigg, 1209600, !Ref AWS::NoValue]",
			"Resources.Dlq (AWS::SQS::Queue).Properties.MessageRetentionPeriod: Fn::If Bigg names no condition"},
		{"a resource's Condition naming nothing", "    Condition: Big\n    Properties:", "    Condition: Bigg\n    Properties:",
			"Resources.MoreLogs (AWS::Logs::LogGroup).Condition: Condition Bigg names no condition"},
		{"a condition referring to a resource", "!Equals [!Ref Visibility, 600]", "!Equals [!Ref Queue, 600]",
			"Conditions.Big(Fn::Equals)[0]: Ref Queue names a resource: a condition can only refer to parameters"},
		{"an output's Ref to nothing", "Value: !Ref Queue\n", "Value: !Ref Queu\n",
			"Outputs.QueueUrl.Value: Ref Queu names no parameter"},
		{"an output's Condition naming nothing", "    Condition: Big\n    Value:", "    Condition: Bigg\n    Value:",
			"Outputs.LogsArn.Condition: Condition Bigg names no condition"},
		{"a Ref in Globals to nothing", "TABLE: !Ref Table", "TABLE: !Ref Tabel",
			"Globals.Function.Environment.Variables.TABLE: Ref Tabel names no parameter"},
		{"a Ref in a SAM event to nothing", "ApiId: !Ref Api", "ApiId: !Ref Apii",
			"Resources.Function (AWS::Serverless::Function).Properties.Events.Api.Properties.ApiId: Ref Apii names no parameter"},

		// What intrinsics give: a string where the schema takes none.
		{"a Fn::Sub text for an integer", "      Period: 60\n", "      Period: !Sub \"x\"\n",
			`Properties.Period: Fn::Sub "x" gives "x": "x" is not of type integer`},
		{"a Fn::Sub that cannot be a number for an integer", "VisibilityTimeout: !Ref Visibility", `VisibilityTimeout: !Sub "${Visibility}s"`,
			`Properties.VisibilityTimeout: Fn::Sub "${Visibility}s" gives a string, not integer`},
		{"a Fn::GetAtt string for an object", "StreamSpecification: { StreamViewType: NEW_AND_OLD_IMAGES }", "StreamSpecification: !GetAtt Queue.Arn",
			"Resources.Table (AWS::DynamoDB::Table).Properties.StreamSpecification: Fn::GetAtt Queue.Arn gives a string, not object"},
		{"a Fn::Join for a list", "Dimensions: [{ Name: QueueName, Value: !GetAtt Dlq.QueueName }]", `Dimensions: !Join [",", [a, b]]`,
			`Properties.Dimensions: Fn::Join gives "a,b": "a,b" is not of type array`},
		{"a Fn::Base64 for a boolean", "FifoQueue: true\n", "FifoQueue: !Base64 true\n",
			`Properties.FifoQueue: Fn::Base64 gives "dHJ1ZQ==": "dHJ1ZQ==" is not of type boolean`},
		{"a list parameter for a string", "Namespace: AWS/SQS", "Namespace: !Ref Topics",
			"Properties.Namespace: Ref Topics: the parameter's Default [arn:aws:sns:eu-west-1:123456789012:a arn:aws:sns:eu-west-1:123456789012:b]: Properties.Namespace: a list is not of type string"},
		{"a resource's Ref for a list", "Dimensions: [{ Name: QueueName, Value: !GetAtt Dlq.QueueName }]", "Dimensions: !Ref Dlq",
			"Properties.Dimensions: Ref Dlq gives a string, not array"},

		// Resource attributes.
		{"a DeletionPolicy AWS does not know", "DeletionPolicy: Retain", "DeletionPolicy: Retian",
			`Resources.Table (AWS::DynamoDB::Table).DeletionPolicy: "Retian" is not one of [Delete, Retain, RetainExceptOnCreate, Snapshot]`},
		{"an UpdateReplacePolicy AWS does not know", "UpdateReplacePolicy: Retain", "UpdateReplacePolicy: Keep",
			`Resources.Table (AWS::DynamoDB::Table).UpdateReplacePolicy: "Keep" is not one of`},
		{"a DependsOn naming nothing", "DependsOn: Dlq", "DependsOn: [Dlq, Tabel]",
			"Resources.Queue (AWS::SQS::Queue).DependsOn[1]: DependsOn Tabel names no resource"},
		{"a resource depending on itself", "DependsOn: Dlq", "DependsOn: Queue",
			"Resources.Queue (AWS::SQS::Queue).DependsOn: a resource cannot depend on itself"},
		{"a misspelt Properties", "    Condition: Big\n    Properties:", "    Condition: Big\n    Propertes:",
			"Resources.MoreLogs (AWS::Logs::LogGroup).Propertes: is not a resource attribute CloudFormation knows"},

		// SAM: the function as AWS::Lambda::Function, with Globals, and its
		// SQS and DynamoDB events as AWS::Lambda::EventSourceMapping.
		{"an SQS event's BatchSize above a FIFO queue's 10", "            BatchSize: 10\n            FunctionResponseTypes", "            BatchSize: 5000\n            FunctionResponseTypes",
			"Resources.Function (AWS::Serverless::Function).Properties.Events.Commands.Properties.BatchSize: 5000 is above 10, the most Lambda takes for a FIFO queue"},
		{"an SQS event's BatchSize above 10 without a batching window", "Queue: !GetAtt Plain.Arn\n            BatchSize: 10", "Queue: !GetAtt Plain.Arn\n            BatchSize: 5000",
			"Properties.Events.Standard.Properties.BatchSize: 5000 is above 10, which Lambda takes for SQS only with a MaximumBatchingWindowInSeconds of at least 1"},
		{"an SQS event's misspelt FunctionResponseTypes", "[ReportBatchItemFailures]", "[ReportBatchItemFailure]",
			`Properties.Events.Commands.Properties.FunctionResponseTypes[0]: "ReportBatchItemFailure" is not one of [ReportBatchItemFailures] [as AWS::Lambda::EventSourceMapping]`},
		{"an SQS event's ScalingConfig below the minimum", "MaximumConcurrency: 5", "MaximumConcurrency: 1",
			"Properties.Events.Commands.Properties.ScalingConfig.MaximumConcurrency: 1 is below the minimum 2"},
		{"an SQS event with a stream's property", "BatchSize: 10\n        Changes", "BatchSize: 10\n            MaximumRetryAttempts: 3\n        Changes",
			"Properties.Events.Standard.Properties.MaximumRetryAttempts: unknown property (not one of SAM's SQS event)"},
		{"an SQS event's Queue naming no queue's attribute", "Queue: !GetAtt Queue.Arn", "Queue: !GetAtt Queue.QueueArn",
			"Properties.Events.Commands.Properties.Queue: Fn::GetAtt Queue.QueueArn: Queue (AWS::SQS::Queue) has no attribute QueueArn"},
		{"a DynamoDB event without StartingPosition", "            StartingPosition: TRIM_HORIZON\n", "",
			"Properties.Events.Changes.Properties: missing StartingPosition, which Lambda requires for a DynamoDB stream"},
		{"a DynamoDB event's MaximumRetryAttempts above the maximum", "MaximumRetryAttempts: 20", "MaximumRetryAttempts: 10001",
			"Properties.Events.Changes.Properties.MaximumRetryAttempts: 10001 is above the maximum 10000 [as AWS::Lambda::EventSourceMapping]"},
		{"a DynamoDB event's OnFailure Type SAM does not know", "OnFailure: { Type: SQS,", "OnFailure: { Type: Queue,",
			`Properties.Events.Changes.Properties.DestinationConfig.OnFailure.Type: "Queue" is not one of [SQS, SNS, S3]`},
		{"a DynamoDB event's BisectBatchOnFunctionError not a boolean", "BisectBatchOnFunctionError: true", "BisectBatchOnFunctionError: sometimes",
			`Properties.Events.Changes.Properties.BisectBatchOnFunctionError: "sometimes" is not of type boolean`},
		{"a function's Timeout from Globals above Lambda's 900", "    Timeout: 30\n", "    Timeout: 901\n",
			"Resources.Function (AWS::Serverless::Function).Properties.Timeout: 901 is above Lambda's maximum of 900 seconds (from Globals.Function) [as AWS::Lambda::Function]"},
		{"a function's Architectures, Globals' and its own", "      MemorySize: 256\n", "      MemorySize: 256\n      Architectures: [x86_64]\n",
			"Properties.Architectures: has 2 items, more than 1 (merged with Globals.Function's) [as AWS::Lambda::Function]"},
		{"a function's MemorySize below Lambda's 128", "MemorySize: 256", "MemorySize: 64",
			"Properties.MemorySize: 64 is outside Lambda's 128 to 10240 MB"},
		{"a function's LogFormat not in the enum", "LogFormat: JSON", "LogFormat: Json",
			`Properties.LoggingConfig.LogFormat: "Json" is not one of [Text, JSON] [as AWS::Lambda::Function]`},
		{"a function's Role not an ARN", "Role: !GetAtt Role.Arn", "Role: my-role",
			`Resources.Function (AWS::Serverless::Function).Properties.Role: "my-role" does not match`},
		{"a function's unknown property", "      MemorySize: 256\n", "      MemorySize: 256\n      Memory: 256\n",
			"Resources.Function (AWS::Serverless::Function).Properties.Memory: unknown property (not one of AWS::Serverless::Function)"},
		{"a function without Runtime", "    Runtime: provided.al2023\n", "",
			"Resources.Function (AWS::Serverless::Function).Properties: a function of PackageType Zip needs Runtime"},
		{"a Globals property SAM does not merge", "    Timeout: 30\n", "    Timeout: 30\n    Role: !GetAtt Role.Arn\n",
			"Globals.Function.Role: is not a property SAM's Globals.Function takes"},
		{"an environment variable name Lambda rejects", "        TABLE: !Ref Table", "        TABLE-NAME: !Ref Table",
			"Properties.Environment.Variables.TABLE-NAME: is not a name Lambda takes for an environment variable ([a-zA-Z][a-zA-Z0-9_]+) (from Globals.Function)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, 1, strings.Count(brokenTemplate, c.old), "the case's text must occur once")
			res := checkTemplate(t, strings.Replace(brokenTemplate, c.old, c.new, 1))
			var msgs []string
			for _, err := range res.Problems {
				msgs = append(msgs, err.Error())
			}
			require.Len(t, msgs, 1, "exactly one problem: %q", msgs)
			require.Contains(t, msgs[0], c.want)
		})
	}
}

// TestRegistryCheckRejectsABrokenRepoTemplate: the same check finds a
// property broken in template.yaml itself.
func TestRegistryCheckRejectsABrokenRepoTemplate(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	queues := tpl.OfType("AWS::SQS::Queue")
	require.NotEmpty(t, queues)
	broken := *tpl
	broken.Resources = map[string]samtemplate.Resource{}
	for name, r := range tpl.Resources {
		broken.Resources[name] = r
	}
	q := broken.Resources[queues[0]]
	props := map[string]any{"VisibilityTimout": 30}
	for k, v := range q.Properties {
		props[k] = v
	}
	q.Properties = props
	broken.Resources[queues[0]] = q
	res := cfnschema.Check(&broken, registrySchemas(t))
	require.Len(t, res.Problems, 1)
	require.Contains(t, res.Problems[0].Error(), "Resources."+queues[0]+" (AWS::SQS::Queue).Properties.VisibilityTimout: unknown property")
}
