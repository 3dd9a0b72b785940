package samtemplate_test

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// template-kafka.yaml is the Kafka variant of the deployment; no real
// cluster can be reached from here, so these checks, with
// internal/dev/cfnschema's TestKafkaTemplateMatchesTheRegistrySchemas, are
// its acceptance. What it shares with template.yaml is held to be the
// same (kafka_shared_template_test.go), so template.yaml's own checks hold
// for it; what it changes or adds is checked here (kafka_checks_test.go),
// for each way to deploy it (kafkaDeployments).

const kafkaTemplatePath = "../../../template-kafka.yaml"

// kafkaTemplate is template-kafka.yaml, parsed once; tests only read it.
var kafkaTemplate, kafkaTemplateErr = samtemplate.Load(kafkaTemplatePath)

func loadKafkaTemplate(t *testing.T) *samtemplate.Template {
	t.Helper()
	require.NoError(t, kafkaTemplateErr)
	return kafkaTemplate
}

func TestKafkaTemplateHoldsToItsChecks(t *testing.T) {
	t.Parallel()
	require.Empty(t, kafkaProblems(loadKafkaTemplate(t)))
}

// Each check can fail: each case breaks template-kafka.yaml in one place,
// and the checks name it.
func TestKafkaChecksCatchEachBreak(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(kafkaTemplatePath)
	require.NoError(t, err)
	src := string(raw)
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"no provisioned mode", "      ProvisionedPollerConfig:\n        MinimumPollers: 1\n        MaximumPollers: !Ref TopicPartitions\n      FunctionResponseTypes: [ReportBatchItemFailures]\n      BisectBatchOnFunctionError: true\n      MaximumRetryAttempts: 7",
			"      FunctionResponseTypes: [ReportBatchItemFailures]\n      BisectBatchOnFunctionError: true\n      MaximumRetryAttempts: 7",
			"WorkerCommandsMapping: no ProvisionedPollerConfig"},
		{"no partial batch responses", "      FunctionResponseTypes: [ReportBatchItemFailures]\n      BisectBatchOnFunctionError: true\n      MaximumRetryAttempts: 9",
			"      BisectBatchOnFunctionError: true\n      MaximumRetryAttempts: 9", "ProjectorEventsMapping: FunctionResponseTypes is <nil>"},
		{"latest, not the earliest", "      Topics: [!Ref CommandsTopicName]\n      StartingPosition: TRIM_HORIZON", "      Topics: [!Ref CommandsTopicName]\n      StartingPosition: LATEST",
			"WorkerCommandsMapping: StartingPosition is LATEST"},
		{"a shared consumer group", `{ ConsumerGroupId: !Sub "${AWS::StackName}-projector" }, !Ref AWS::NoValue]`, `{ ConsumerGroupId: !Sub "${AWS::StackName}-worker" }, !Ref AWS::NoValue]`,
			`msk: ProjectorEventsMapping: consumer group "st-worker" is WorkerCommandsMapping's too`},
		{"retries below the quarantine", "MaximumRetryAttempts: 7 #", "MaximumRetryAttempts: 6 #",
			"CommandsQuarantineAfterAttempts may be 7, above WorkerCommandsMapping's MaximumRetryAttempts 6"},
		{"retries for ever", "MaximumRetryAttempts: 9 #", "MaximumRetryAttempts: -1 #", "ProjectorEventsMapping's MaximumRetryAttempts -1 is not a bound"},
		{"records given up for their age", "      MaximumRetryAttempts: 7 # 8 invocations, as the commands queue's maxReceiveCount 8 in template.yaml\n      MaximumRecordAgeInSeconds: -1",
			"      MaximumRetryAttempts: 7 # 8 invocations, as the commands queue's maxReceiveCount 8 in template.yaml\n      MaximumRecordAgeInSeconds: 3600",
			"WorkerCommandsMapping: MaximumRecordAgeInSeconds is 3600"},
		{"no bisection", "      BisectBatchOnFunctionError: true\n      MaximumRetryAttempts: 9", "      BisectBatchOnFunctionError: false\n      MaximumRetryAttempts: 9",
			"ProjectorEventsMapping: BisectBatchOnFunctionError is false"},
		{"no on-failure destination", "      MaximumRecordAgeInSeconds: -1\n      DestinationConfig:\n        OnFailure:\n          Destination: !GetAtt KafkaFailuresBucket.Arn\n\n  WorkerFunction:",
			"      MaximumRecordAgeInSeconds: -1\n\n  WorkerFunction:", "WorkerCommandsMapping: DestinationConfig is <nil>"},
		{"the relay outside the VPC", "      VpcConfig:\n        SubnetIds: !Ref SubnetIds\n        SecurityGroupIds: [!GetAtt KafkaClientSecurityGroup.GroupId]\n", "",
			"RelayFunction is not in the cluster's VPC"},
		{"a producer that is not idempotent", "Action: [kafka-cluster:Connect, kafka-cluster:WriteDataIdempotently]", "Action: [kafka-cluster:Connect]",
			"msk: RelayFunction's role: no kafka-cluster:WriteDataIdempotently on " + testCluster},
		{"a topic ARN MSK does not know", `":topic/", !Select [1, !Split [":cluster/", !Sub "${MskClusterArn}:cluster/"]], "/", !Ref EventsTopicName]]
                - !Ref AWS::NoValue
              - !If
                - UseSelfManagedKafka
                - Sid: KafkaSecret # the SCRAM user's credentials`, `":topics/", !Select [1, !Split [":cluster/", !Sub "${MskClusterArn}:cluster/"]], "/", !Ref EventsTopicName]]
                - !Ref AWS::NoValue
              - !If
                - UseSelfManagedKafka
                - Sid: KafkaSecret # the SCRAM user's credentials`, "RelayFunction's role: no kafka-cluster:DescribeTopic on " + topicARN("fifoworker-events")},
		{"a consumer that cannot commit", "                  Action: [kafka-cluster:DescribeGroup, kafka-cluster:AlterGroup]\n                  Resource: !Join [\"\", [!Select [0, !Split [\":cluster/\", !Sub \"${MskClusterArn}:cluster/\"]], \":group/\", !Select [1, !Split [\":cluster/\", !Sub \"${MskClusterArn}:cluster/\"]], \"/\", !Sub \"${AWS::StackName}-projector\"]]",
			"                  Action: [kafka-cluster:DescribeGroup]\n                  Resource: !Join [\"\", [!Select [0, !Split [\":cluster/\", !Sub \"${MskClusterArn}:cluster/\"]], \":group/\", !Select [1, !Split [\":cluster/\", !Sub \"${MskClusterArn}:cluster/\"]], \"/\", !Sub \"${AWS::StackName}-projector\"]]",
			"ProjectorFunction's role: no kafka-cluster:AlterGroup on " + groupARN("st-projector")},
		{"a wildcard action", "Action: [ec2:CreateNetworkInterface, ec2:DescribeNetworkInterfaces, ec2:DescribeSubnets, ec2:DeleteNetworkInterface, ec2:AssignPrivateIpAddresses, ec2:UnassignPrivateIpAddresses]",
			"Action: [\"ec2:*\"]", "RelayFunction's role: action ec2:*"},
		{"another action on *", "Action: [ec2:CreateNetworkInterface, ec2:DescribeNetworkInterfaces, ec2:DescribeSubnets, ec2:DeleteNetworkInterface, ec2:AssignPrivateIpAddresses, ec2:UnassignPrivateIpAddresses]",
			"Action: [ec2:CreateNetworkInterface, ec2:DescribeNetworkInterfaces, ec2:DescribeSubnets, ec2:DeleteNetworkInterface, ec2:AssignPrivateIpAddresses, ec2:UnassignPrivateIpAddresses, ec2:RunInstances]",
			`RelayFunction's role: ec2:RunInstances on "*"`},
		{"the brokers' port", "          FromPort: !If [UseMsk, 9098, !Ref SelfManagedKafkaPort]\n          ToPort: !If [UseMsk, 9098, !Ref SelfManagedKafkaPort]\n          DestinationSecurityGroupId",
			"          FromPort: !If [UseMsk, 9092, !Ref SelfManagedKafkaPort]\n          ToPort: !If [UseMsk, 9092, !Ref SelfManagedKafkaPort]\n          DestinationSecurityGroupId",
			"msk: KafkaClientSecurityGroup's egress [tcp 9092-9092 sg-0c"},
		{"no S3 endpoint", `ServiceName: !Sub "com.amazonaws.${AWS::Region}.s3"`, `ServiceName: !Sub "com.amazonaws.${AWS::Region}.dynamodb"`,
			"msk: VPC endpoints map[dynamodb:Gateway], not map[s3:Gateway]"},
		{"an endpoint made when told not to", "    Type: AWS::EC2::VPCEndpoint\n    Condition: MakeVpcEndpoints\n", "    Type: AWS::EC2::VPCEndpoint\n",
			"msk, no endpoints, self ingress: VPC endpoints map[s3:Gateway], not map[]"},
		{"no private DNS", "      PrivateDnsEnabled: true", "      PrivateDnsEnabled: false", "SecretsManagerEndpoint: an interface endpoint needs SubnetIds and private DNS"},
		{"two authentications", "          - { Type: SASL_SCRAM_512_AUTH, URI: !Ref KafkaSecretArn }\n      Topics: [!Ref CommandsTopicName]",
			"          - { Type: SASL_SCRAM_512_AUTH, URI: !Ref KafkaSecretArn }\n          - { Type: BASIC_AUTH, URI: !Ref KafkaSecretArn }\n      Topics: [!Ref CommandsTopicName]",
			"self-managed: WorkerCommandsMapping: authentication [SASL_SCRAM_512_AUTH " + testSecret + " BASIC_AUTH"},
		{"subnets without a security group", "          - { Type: VPC_SECURITY_GROUP, URI: !Sub \"security_group:${KafkaClientSecurityGroup.GroupId}\" }\n          - { Type: SASL_SCRAM_512_AUTH, URI: !Ref KafkaSecretArn }\n      Topics: [!Ref EventsTopicName]",
			"          - { Type: SASL_SCRAM_512_AUTH, URI: !Ref KafkaSecretArn }\n      Topics: [!Ref EventsTopicName]",
			"self-managed: ProjectorEventsMapping: VPC security groups [], not KafkaClientSecurityGroup"},
		{"another writer of failed records", "aws:PrincipalArn: [!GetAtt WorkerRole.Arn, !GetAtt ProjectorRole.Arn]", "aws:PrincipalArn: [!GetAtt WorkerRole.Arn]",
			"only the consumers' roles write false"},
		{"a held alarm on the other topic", "Dimensions: [{ Name: Queue, Value: !Ref CommandsTopicName }]", "Dimensions: [{ Name: Queue, Value: !Ref EventsTopicName }]",
			"CommandsHeldAlarm watches"},
		{"a quarantine scope of the other topic", `dynamodb:LeadingKeys: [!Sub "${CommandsTopicName}#*"]`, `dynamodb:LeadingKeys: [!Sub "${EventsTopicName}#*"]`,
			"WorkerFunction's role: [dynamodb:BatchGetItem"},
		{"a queue setting left", "          COMMANDS_TOPIC: !Ref CommandsTopicName # the quarantine's source", "          COMMANDS_QUEUE_ARN: !Ref CommandsTopicName # the quarantine's source",
			"WorkerFunction: COMMANDS_QUEUE_ARN, a queue's setting"},
		{"a bootstrap built for SQS", "        TRANSPORT: kafka", "        TRANSPORT: sqs", "Globals.Function's TRANSPORT is sqs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, 1, strings.Count(src, c.old), "the case's text must occur once")
			broken, err := samtemplate.Parse([]byte(strings.Replace(src, c.old, c.new, 1)))
			require.NoError(t, err)
			problems := kafkaProblems(broken)
			require.NotEmpty(t, problems)
			require.Contains(t, strings.Join(problems, "\n"), c.want)
		})
	}
}

// A deployment that names no cluster for its source, or asks for the VPC
// endpoints without the route tables the S3 gateway endpoint is made on,
// is refused by the template's Rules before anything is created.
func TestKafkaTemplateRefusesASourceWithoutItsCluster(t *testing.T) {
	t.Parallel()
	tpl := loadKafkaTemplate(t)
	for _, d := range kafkaDeployments {
		_, err := kafkaDeploymentOf(tpl, d.values())
		require.NoError(t, err, d.name)
	}
	msk := kafkaDeployments[0].values()
	delete(msk, "MskClusterArn")
	_, err := kafkaDeploymentOf(tpl, msk)
	require.ErrorContains(t, err, `"MskNeedsItsCluster"`)
	selfManaged := kafkaDeployments[2].values()
	delete(selfManaged, "KafkaSecretArn")
	_, err = kafkaDeploymentOf(tpl, selfManaged)
	require.ErrorContains(t, err, `"SelfManagedNeedsItsSecret"`)
	for _, tables := range []string{"", "rtb-0a,", "rtb-0a, "} {
		noTables := kafkaDeployments[0].values()
		noTables["RouteTableIds"] = tables
		_, err = kafkaDeploymentOf(tpl, noTables)
		require.ErrorContains(t, err, `"EndpointsNeedRouteTables"`, "RouteTableIds %q", tables)
		noTables["CreateVpcEndpoints"] = "false"
		_, err = kafkaDeploymentOf(tpl, noTables)
		require.NoError(t, err, "no endpoints made, RouteTableIds %q", tables)
	}
}

// kafkaRetryProblem's bounds, each at exactly its value: the threshold at
// its largest may be the mapping's MaximumRetryAttempts, not one more; at
// its smallest the attempts its recovery needs, not one fewer.
func TestKafkaRetriesAreBoundedAtExactlyTheThreshold(t *testing.T) {
	t.Parallel()
	for _, k := range kafkaConsumers {
		tpl := *loadKafkaTemplate(t)
		retries := tpl.Resources[k.mapping].Properties["MaximumRetryAttempts"].(int)
		least := toInt(tpl.Parameters["RecoverAfterAttempts"].MaxValue) + 1
		if k.function == "WorkerFunction" {
			least = toInt(tpl.Parameters["MaxGenerations"].MaxValue) + 2
		}
		tpl.Parameters = maps.Clone(tpl.Parameters)
		set := func(lo, hi int) string {
			tpl.Parameters[k.threshold] = samtemplate.Parameter{Type: "Number", MinValue: lo, MaxValue: hi}
			return kafkaRetryProblem(&tpl, k)
		}
		require.Empty(t, set(least, retries), k.threshold)
		require.Contains(t, set(least, retries+1), fmt.Sprintf("may be %d, above %s's MaximumRetryAttempts %d", retries+1, k.mapping, retries))
		require.Contains(t, set(least-1, retries), fmt.Sprintf("may be %d, below %d", least-1, least))
	}
}

// The topics' names are Kafka's (letters, digits, '.', '_', '-', at most
// 249) and not "." or "..", which the pattern refuses by their first
// character; and, as the mappings' registry schema takes a topic
// (^[^.]([a-zA-Z0-9\-_.]+)), of two characters at least;
// the partitions, each a poller at most, within provisioned mode's 2000.
func TestKafkaTopicsAreNamedAsKafkaNamesThem(t *testing.T) {
	t.Parallel()
	tpl := loadKafkaTemplate(t)
	for _, name := range []string{"CommandsTopicName", "EventsTopicName"} {
		p := tpl.Parameters[name]
		pattern := regexp.MustCompile(p.AllowedPattern)
		require.True(t, pattern.MatchString(fmt.Sprint(p.Default)), name)
		for s, ok := range map[string]bool{
			strings.Repeat("a", 249): true, strings.Repeat("a", 250): false, "a.b_c-9": true,
			".": false, "..": false, ".hidden": false, "a b": false, "": false, "a/b": false, "a": false, "ab": true,
		} {
			require.Equal(t, ok, pattern.MatchString(s), "%s: %q", name, s)
		}
	}
	require.NotEqual(t, tpl.Parameters["CommandsTopicName"].Default, tpl.Parameters["EventsTopicName"].Default)
	partitions := tpl.Parameters["TopicPartitions"]
	require.Equal(t, []int{1, 2000}, []int{toInt(partitions.MinValue), toInt(partitions.MaxValue)})
}

// Lambda runs a Kafka mapping's invocation for 14 minutes at most: the
// worker's timeout, the takeover's clock, stays within that.
func TestKafkaWorkerTimeoutIsWithinLambdasKafkaBound(t *testing.T) {
	t.Parallel()
	p := loadKafkaTemplate(t).Parameters["WorkerTimeout"]
	require.Equal(t, []int{3, 840}, []int{toInt(p.MinValue), toInt(p.MaxValue)})
	require.LessOrEqual(t, toInt(p.Default), 840)
}

// The quarantine scopes the consumers' roles carry are what pkg/quarantine
// writes with a topic's name as its source (the partition keys of each
// request for a job's key, a parked body's key): each topic's match its
// own scope and not the other's.
func TestKafkaQuarantineScopesMatchTheKeysTheQuarantineWrites(t *testing.T) {
	t.Parallel()
	tpl := loadKafkaTemplate(t)
	topic := func(param string) string { return fmt.Sprint(tpl.Parameters[param].Default) }
	for _, k := range kafkaConsumers {
		keys := partitionKeys(t, topic(k.topic), "job-42")
		require.NotEmpty(t, keys)
		body := quarantine.BodyKey(topic(k.topic), "job-42", strings.Repeat("0", 39)+"1")
		for _, other := range kafkaConsumers {
			for _, key := range keys {
				require.Equal(t, other == k, stringLike(topic(other.topic)+"#*", key), "%s's key %q against %s's scope", k.topic, key, other.topic)
			}
			require.Equal(t, other == k, stringLike("quarantine/"+topic(other.topic)+"/*", body), "%s's body %q against %s's", k.topic, body, other.topic)
		}
	}
}

// The evaluator computes what CloudFormation would: the checks' ARNs and
// names rest on it.
func TestEvaluatorComputesWhatCloudFormationWould(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Parse([]byte(`
Parameters:
  Arn: {Type: String, Default: ""}
  Subnets: {Type: "List<AWS::EC2::Subnet::Id>", Default: "subnet-a,subnet-b"}
Resources:
  Q: {Type: AWS::SQS::Queue}
`))
	require.NoError(t, err)
	topic := map[string]any{"Fn::Join": []any{"", []any{
		map[string]any{"Fn::Select": []any{0, map[string]any{"Fn::Split": []any{":cluster/", map[string]any{"Fn::Sub": "${Arn}:cluster/"}}}}},
		":topic/",
		map[string]any{"Fn::Select": []any{1, map[string]any{"Fn::Split": []any{":cluster/", map[string]any{"Fn::Sub": "${Arn}:cluster/"}}}}},
		"/t",
	}}}
	for _, c := range []struct {
		values map[string]string
		v      any
		want   string
	}{
		{map[string]string{"Arn": testCluster}, topic, topicARN("t")},
		{nil, topic, ":topic//t"}, // an empty ARN still splits in two: no Fn::Select fails
		{nil, map[string]any{"Fn::Sub": []any{"subnet:${S}", map[string]any{"S": map[string]any{"Fn::Select": []any{1, ref("Subnets")}}}}}, "subnet:subnet-b"},
		{nil, map[string]any{"Fn::Sub": "${AWS::StackName}-${Q}-${Q.Arn}-${!Literal}"}, "st-<Q>-<Q.Arn>-${Literal}"},
		{nil, map[string]any{"Fn::Join": []any{",", ref("Subnets")}}, "subnet-a,subnet-b"},
	} {
		got, err := evaluator{tpl: tpl, values: c.values}.str(c.v)
		require.NoError(t, err, "%v", c.v)
		require.Equal(t, c.want, got)
	}
	_, err = evaluator{tpl: tpl}.str(map[string]any{"Fn::Select": []any{2, ref("Subnets")}})
	require.ErrorContains(t, err, "no such item")
}
