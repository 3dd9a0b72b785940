package samtemplate_test

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/samtemplate"
)

// rainModule is the module whose files hold the CloudFormation registry
// schemas; go.mod pins its version (registry_pin.go keeps it there).
const rainModule = "github.com/aws-cloudformation/rain"

var (
	schemasOnce sync.Once
	schemasDir  string
	schemasErr  error
)

// registrySchemas opens the registry schemas of the version of rainModule
// that go.mod requires, downloading it into the module cache if it is not
// there yet (go verifies it against go.sum).
func registrySchemas(t *testing.T) *samtemplate.RegistrySchemas {
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
	return samtemplate.NewRegistrySchemas(schemasDir)
}

type downloadError struct {
	err            error
	stderr, stdout string
}

func (e *downloadError) Error() string {
	return "go mod download " + rainModule + ": " + strings.TrimSpace(e.stderr+" "+e.stdout)
}

// TestRepoTemplateMatchesTheRegistrySchemas: every plain CloudFormation
// resource of template.yaml (every one but SAM's) has only properties its
// type's registry schema knows, of the right types and values, and all the
// properties the schema requires.
func TestRepoTemplateMatchesTheRegistrySchemas(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	res := tpl.CheckRegistry(registrySchemas(t))
	for _, err := range res.Problems {
		t.Error(err)
	}
	plain := 0
	for _, r := range tpl.Resources {
		if !strings.HasPrefix(r.Type, "AWS::Serverless::") {
			plain++
		}
	}
	require.Len(t, res.Checked, plain, "every plain resource is checked; skipped: %v", res.Skipped)
	for _, s := range res.Skipped {
		require.Contains(t, s, "AWS::Serverless::", "only SAM's resources are skipped")
	}
}

// brokenTemplate is a small template with one resource of each kind the
// cases below break.
const brokenTemplate = `
Transform: AWS::Serverless-2016-10-31
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
Conditions:
  Big: !Equals [!Ref Visibility, 600]
Resources:
  Queue:
    Type: AWS::SQS::Queue
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
  Table:
    Type: AWS::DynamoDB::Table
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
    Properties:
      LogGroupName: /aws/lambda/more
      RetentionInDays: 14
  Alarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Namespace: AWS/SQS
      MetricName: ApproximateNumberOfMessagesVisible
      Dimensions: [{ Name: QueueName, Value: !GetAtt Dlq.QueueName }]
      Statistic: Maximum
      Period: 60
      EvaluationPeriods: 1
      Threshold: 0
      ComparisonOperator: GreaterThanThreshold
      AlarmActions: !If [Big, [!Ref AWS::NoValue], []]
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
      NotARealSAMProperty: is not checked
`

func checkTemplate(t *testing.T, src string) samtemplate.RegistryCheck {
	t.Helper()
	tpl, err := samtemplate.Parse([]byte(src))
	require.NoError(t, err)
	return tpl.CheckRegistry(registrySchemas(t))
}

// TestRegistryCheckAcceptsIntrinsicsWhereverAValueIs: the small template
// above, unbroken, passes: !Ref, !GetAtt, !Sub, !Join and !If stand for
// scalars, lists and objects, and "true" for a boolean.
func TestRegistryCheckAcceptsIntrinsicsWhereverAValueIs(t *testing.T) {
	t.Parallel()
	res := checkTemplate(t, brokenTemplate)
	require.Empty(t, res.Problems)
	require.Equal(t, []string{"Alarm", "Dlq", "History", "Logs", "MoreLogs", "Queue", "Role", "Table"}, res.Checked)
	require.Equal(t, []string{"Function (AWS::Serverless::Function): a SAM resource, transformed before CloudFormation sees it"}, res.Skipped)
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
			"Resources.Logs (AWS::Logs::LogGrup).Type: samtemplate: no registry schema for AWS::Logs::LogGrup"},
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
	res := broken.CheckRegistry(registrySchemas(t))
	require.Len(t, res.Problems, 1)
	require.Contains(t, res.Problems[0].Error(), "Resources."+queues[0]+" (AWS::SQS::Queue).Properties.VisibilityTimout: unknown property")
}
