package samtemplate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// template-kafka-postgres.yaml is the seed's own system: Kafka partitions
// in, the arbiter on PostgreSQL. No cluster, Aurora or RDS Proxy can be
// reached from here, so these checks, with internal/dev/cfnschema's
// TestKafkaPostgresTemplateMatchesTheRegistrySchemas, are its acceptance.
// What it shares with template-kafka.yaml and template-postgres.yaml is
// held to be the same (kafka_postgres_shared_template_test.go), so their
// checks of those entries (the topics' and the database's parameters'
// patterns, the worker's timeout, ...) hold for it; what it changes is
// checked here (kafka_postgres_checks_test.go), for each way to deploy it.

const kafkaPostgresTemplatePath = "../../../" + kafkaPostgresFile

// kafkaPostgresTemplate is template-kafka-postgres.yaml, parsed once; tests
// only read it.
var kafkaPostgresTemplate, kafkaPostgresTemplateErr = samtemplate.Load(kafkaPostgresTemplatePath)

func loadKafkaPostgresTemplate(t *testing.T) *samtemplate.Template {
	t.Helper()
	require.NoError(t, kafkaPostgresTemplateErr)
	return kafkaPostgresTemplate
}

func TestKafkaPostgresTemplateHoldsToItsChecks(t *testing.T) {
	t.Parallel()
	require.Empty(t, kafkaPostgresProblems(loadKafkaPostgresTemplate(t)))
}

// Each check can fail: each case breaks template-kafka-postgres.yaml in
// one place, and the checks name it.
func TestKafkaPostgresChecksCatchEachBreak(t *testing.T) {
	t.Parallel()
	requireEachBreakNamed(t, kafkaPostgresTemplatePath, kafkaPostgresProblems, []breakCase{
		// Its own: where the functions run, what they reach.
		{"the relay without the Kafka clients' group", "      VpcConfig:\n        SubnetIds: !Ref SubnetIds\n        SecurityGroupIds: [!GetAtt KafkaClientSecurityGroup.GroupId]\n", "",
			"RelayFunction runs with VpcConfig map[SecurityGroupIds:[map[Fn::GetAtt:[FunctionsSecurityGroup GroupId]]]"},
		{"the relay's groups written out, so doubled", "        SecurityGroupIds: [!GetAtt KafkaClientSecurityGroup.GroupId]\n      Environment:",
			"        SecurityGroupIds: [!GetAtt FunctionsSecurityGroup.GroupId, !GetAtt KafkaClientSecurityGroup.GroupId]\n      Environment:",
			"RelayFunction runs with VpcConfig map[SecurityGroupIds:[map[Fn::GetAtt:[FunctionsSecurityGroup GroupId]] map[Fn::GetAtt:[FunctionsSecurityGroup GroupId]]"},
		{"a function out of the VPC", "    VpcConfig:\n      SubnetIds: !Ref SubnetIds\n      SecurityGroupIds: [!GetAtt FunctionsSecurityGroup.GroupId]\n", "",
			"IntakeFunction runs with VpcConfig map[] as deployed"},
		{"no DynamoDB endpoint for the articles", `ServiceName: !Sub "com.amazonaws.${AWS::Region}.dynamodb"`, `ServiceName: !Sub "com.amazonaws.${AWS::Region}.s3express"`,
			"msk, new cluster: VPC endpoints map[lambda:Interface s3:Gateway s3express:Gateway], not map[dynamodb:Gateway lambda:Interface s3:Gateway]"},
		{"the secret's endpoint shut to the relay", "        - Description: HTTPS from the Kafka clients\n          IpProtocol: tcp\n          FromPort: 443\n          ToPort: 443\n          SourceSecurityGroupId: !GetAtt KafkaClientSecurityGroup.GroupId",
			"        - Description: HTTPS from the Kafka clients\n          IpProtocol: tcp\n          FromPort: 443\n          ToPort: 443\n          SourceSecurityGroupId: !GetAtt FunctionsSecurityGroup.GroupId",
			"SecretsManagerEndpoint: the functions may not reach it on 443 alone"},
		{"a bootstrap built for SQS", "        TRANSPORT: kafka", "        TRANSPORT: sqs", "MigrateFunction: TRANSPORT is sqs, not kafka"},
		// The database side, as template-postgres.yaml's checks hold it.
		{"a password in the environment", "        POSTGRES_MAX_CONNS: !Ref PostgresMaxConns\n", "        POSTGRES_MAX_CONNS: !Ref PostgresMaxConns\n        POSTGRES_PASSWORD: '{{resolve:secretsmanager:db}}'\n",
			"POSTGRES_PASSWORD={{resolve:secretsmanager:db}}: a secret in the environment"},
		{"the Kafka secret's ARN on another function", "          TOPIC_PARTITIONS: !Ref TopicPartitions # the count the relay stamps each record with; a record of another count holds its key (docs/KAFKA.md)\n          EPHEMERAL_STORAGE_MB",
			"          TOPIC_PARTITIONS: !Ref TopicPartitions # the count the relay stamps each record with; a record of another count holds its key (docs/KAFKA.md)\n          KAFKA_SECRET_ARN: !Ref KafkaSecretArn\n          EPHEMERAL_STORAGE_MB",
			"WorkerFunction: KAFKA_SECRET_ARN=map[Ref:KafkaSecretArn]: a secret in the environment"},
		{"the relay on the stream again", "          TOPIC_PARTITIONS: !Ref TopicPartitions # stamped on each record; the relay produces only while the brokers show this count (docs/KAFKA.md)\n",
			"          TOPIC_PARTITIONS: !Ref TopicPartitions # stamped on each record; the relay produces only while the brokers show this count (docs/KAFKA.md)\n      Events:\n        JobsStream:\n          Type: DynamoDB\n          Properties:\n            Stream: arn:aws:dynamodb:eu-west-1:123456789012:table/jobs/stream/x\n            StartingPosition: TRIM_HORIZON\n",
			"RelayFunction: a DynamoDB stream event JobsStream"},
		{"the relay's backstop every hour", "      ScheduleExpression: rate(1 minute)", "      ScheduleExpression: rate(1 hour)", "the relay's schedules [RelaySchedule rate(1 hour) ENABLED]"},
		{"a writer that cannot nudge", "          RELAY_FUNCTION_NAME: !Ref RelayFunction # a claim's", "          RELAY_NAME: !Ref RelayFunction # a claim's",
			"WorkerFunction writes jobs: lambda:InvokeFunction on [<RelayFunction.Arn>] and RELAY_FUNCTION_NAME <nil>"},
		{"a reader that nudges", "              - Sid: QuarantineBodies # parked bodies too large for a row, under quarantine/<topic>/ (pkg/quarantine.BodyKey)\n                Effect: Allow\n                Action: [s3:PutObject]\n                Resource: !Sub \"${CandidatesBucket.Arn}/quarantine/${EventsTopicName}/*\"\n",
			"              - Sid: QuarantineBodies # parked bodies too large for a row, under quarantine/<topic>/ (pkg/quarantine.BodyKey)\n                Effect: Allow\n                Action: [s3:PutObject]\n                Resource: !Sub \"${CandidatesBucket.Arn}/quarantine/${EventsTopicName}/*\"\n              - Sid: Nudge\n                Effect: Allow\n                Action: [lambda:InvokeFunction]\n                Resource: !GetAtt RelayFunction.Arn\n",
			"ProjectorFunction writes no job, yet may invoke [<RelayFunction.Arn>]"},
		{"the worker before the schema", "    DependsOn: DatabaseSchema # and so does WorkerCommandsMapping", "    # and so does WorkerCommandsMapping",
			"WorkerFunction does not depend on DatabaseSchema"},
		{"a table kept for the quarantine", "  ArticlesTable:\n", "  QuarantineTable:\n    Type: AWS::DynamoDB::Table\n  ArticlesTable:\n", "DynamoDB tables [ArticlesTable QuarantineTable]"},
		// The Kafka side, as template-kafka.yaml's checks hold it.
		{"a producer that is not idempotent", "Action: [kafka-cluster:Connect, kafka-cluster:WriteDataIdempotently]", "Action: [kafka-cluster:Connect]",
			"msk, new cluster: RelayFunction's role: no kafka-cluster:WriteDataIdempotently on " + testCluster},
		{"a consumer group shared", `{ ConsumerGroupId: !Sub "${AWS::StackName}-projector" }, !Ref AWS::NoValue]`, `{ ConsumerGroupId: !Sub "${AWS::StackName}-worker" }, !Ref AWS::NoValue]`,
			`ProjectorEventsMapping: consumer group "st-worker" is WorkerCommandsMapping's too`},
		{"the brokers' port", "          FromPort: !If [UseMsk, 9098, !Ref SelfManagedKafkaPort]\n          ToPort: !If [UseMsk, 9098, !Ref SelfManagedKafkaPort]\n          DestinationSecurityGroupId",
			"          FromPort: !If [UseMsk, 9092, !Ref SelfManagedKafkaPort]\n          ToPort: !If [UseMsk, 9092, !Ref SelfManagedKafkaPort]\n          DestinationSecurityGroupId",
			"msk, new cluster: KafkaClientSecurityGroup's egress [tcp 9092-9092 sg-0c"},
		{"parked bodies of the other topic", `Resource: !Sub "${CandidatesBucket.Arn}/quarantine/${CommandsTopicName}/*"`, `Resource: !Sub "${CandidatesBucket.Arn}/quarantine/${EventsTopicName}/*"`,
			"WorkerFunction's role: parked bodies"},
		{"a wildcard action", "Action: [ec2:CreateNetworkInterface, ec2:DescribeNetworkInterfaces, ec2:DescribeVpcs, ec2:DeleteNetworkInterface, ec2:DescribeSubnets, ec2:DescribeSecurityGroups]\n                Resource: \"*\"\n              - !If\n                - UseMsk\n                - Sid: MskCluster # find the cluster's brokers; connect (IAM)\n                  Effect: Allow\n                  Action: [kafka:DescribeClusterV2, kafka:GetBootstrapBrokers, kafka-cluster:Connect, kafka-cluster:DescribeClusterDynamicConfiguration]\n                  Resource: !Ref MskClusterArn\n                - !Ref AWS::NoValue\n              - !If\n                - UseMsk\n                - Sid: MskConsumeTopic\n                  Effect: Allow\n                  Action: [kafka-cluster:DescribeTopic, kafka-cluster:ReadData]\n                  Resource: !Join [\"\", [!Select [0, !Split [\":cluster/\", !Sub \"${MskClusterArn}:cluster/\"]], \":topic/\", !Select [1, !Split [\":cluster/\", !Sub \"${MskClusterArn}:cluster/\"]], \"/\", !Ref EventsTopicName]]",
			"Action: [\"ec2:*\"]\n                Resource: \"*\"\n              - !If\n                - UseMsk\n                - Sid: MskCluster # find the cluster's brokers; connect (IAM)\n                  Effect: Allow\n                  Action: [kafka:DescribeClusterV2, kafka:GetBootstrapBrokers, kafka-cluster:Connect, kafka-cluster:DescribeClusterDynamicConfiguration]\n                  Resource: !Ref MskClusterArn\n                - !Ref AWS::NoValue\n              - !If\n                - UseMsk\n                - Sid: MskConsumeTopic\n                  Effect: Allow\n                  Action: [kafka-cluster:DescribeTopic, kafka-cluster:ReadData]\n                  Resource: !Join [\"\", [!Select [0, !Split [\":cluster/\", !Sub \"${MskClusterArn}:cluster/\"]], \":topic/\", !Select [1, !Split [\":cluster/\", !Sub \"${MskClusterArn}:cluster/\"]], \"/\", !Ref EventsTopicName]]",
			"ProjectorFunction's role: action ec2:*"},
		{"retries below the quarantine", "MaximumRetryAttempts: 7 #", "MaximumRetryAttempts: 6 #",
			"CommandsQuarantineAfterAttempts may be 7, above WorkerCommandsMapping's MaximumRetryAttempts 6"},
	})
}

// A deployment that names no Kafka cluster for its source, no secret or
// security group for an existing database cluster, or asks for the VPC
// endpoints without route tables, is refused by the template's Rules
// before anything is created.
func TestKafkaPostgresTemplateRefusesWhatItsRulesRefuse(t *testing.T) {
	t.Parallel()
	tpl := loadKafkaPostgresTemplate(t)
	for _, c := range []struct {
		deployment int
		param      string
		value      *string
		rule       string
	}{
		{0, "MskClusterArn", nil, "MskNeedsItsCluster"},
		{2, "KafkaSecretArn", nil, "SelfManagedNeedsItsSecret"},
		{1, "ExistingDBSecretArn", nil, "ExistingClusterNeedsItsSecretAndGroup"},
		{3, "ExistingDBSecurityGroupId", nil, "ExistingClusterNeedsItsSecretAndGroup"},
		{2, "RouteTableIds", new("rtb-0a,"), "EndpointsNeedRouteTables"},
	} {
		values := kafkaPostgresDeployments[c.deployment].values()
		_, err := kafkaDeploymentOf(tpl, values)
		require.NoError(t, err, c.param)
		delete(values, c.param)
		if c.value != nil {
			values[c.param] = *c.value
		}
		_, err = kafkaDeploymentOf(tpl, values)
		require.ErrorContains(t, err, `"`+c.rule+`"`, c.param)
	}
}

// The functions are built from their directories with both tags: the five
// of template.yaml from main_kafka_postgres.go (`kafka && postgres`), the
// migration from functions/migrate/ (built with postgres, whatever the
// transport). The files are the wiring's (issue 18): until one is there,
// its check waits for it (logged); once it is, it must be what the
// template builds.
func TestKafkaPostgresFunctionsAreBuiltFromTheirDirectories(t *testing.T) {
	t.Parallel()
	require.Empty(t, bootstrapProblems(t, filepath.Join("..", "..", ".."), postgresFunctions, "main_kafka_postgres.go", "kafka", "postgres"))
	root := t.TempDir()
	for file, src := range map[string]string{
		"functions/worker/main_kafka_postgres.go":  "//go:build postgres\n\npackage main\n",
		"functions/relay/main_kafka_postgres.go":   "//go:build kafka && postgres\n\npackage relay\n",
		"functions/sweeper/main_kafka_postgres.go": "//go:build kafka && postgres\n\npackage main\n",
		"functions/migrate/main.go":                "//go:build postgres && !kafka\n\npackage main\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(file)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, file), []byte(src), 0o600))
	}
	problems := strings.Join(bootstrapProblems(t, root, postgresFunctions, "main_kafka_postgres.go", "kafka", "postgres"), "\n")
	require.Contains(t, problems, "WorkerFunction: no file of "+filepath.Join(root, "functions/worker/main_kafka_postgres.go"))
	require.Contains(t, problems, "RelayFunction: no file of")
	require.Contains(t, problems, "MigrateFunction: no file of")
	require.NotContains(t, problems, "SweeperFunction")
}
