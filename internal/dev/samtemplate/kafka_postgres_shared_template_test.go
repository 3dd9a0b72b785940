package samtemplate_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// template-kafka-postgres.yaml is template-kafka.yaml with the arbiter on
// PostgreSQL as template-postgres.yaml has it, both copied (SAM has no
// include). Two comparisons hold the copies, with variant's drift
// (postgres_shared_template_test.go):
//   - every entry of template-kafka.yaml is the same here, but for those
//     kafkaPostgresOnKafka.changes names, each with why; what only
//     template-kafka.yaml has is DynamoDB's arbiter (its baseOnly). So the
//     Kafka template's and template.yaml's checks of a shared entry (the
//     mappings, the topics' parameters, the failed-records bucket, the
//     Kafka clients' group and the cluster's rules, the articles table,
//     the bucket, the API, the alarms, ...) hold here too;
//   - every PostgreSQL entry (what template-postgres.yaml has and
//     template.yaml has not, and what template-postgres.yaml changes from
//     template.yaml: postgresEntries) is the same here, but for those
//     kafkaPostgresOnPostgres.changes names; what this file has no use
//     for is the SQS endpoint (there is no queue).
// An entry both templates changed from template.yaml (the relay, the
// worker, the projector, their roles, the sweeper, Globals) is named in
// both lists; what is changed or added here is checked by
// kafkaPostgresProblems (kafka_postgres_checks_test.go).

const kafkaPostgresFile = "template-kafka-postgres.yaml"

var kafkaPostgresOnKafka = variant{
	file: kafkaPostgresFile,
	base: "template-kafka.yaml",
	changes: map[string]string{
		"Parameters.VpcId":               "the functions, the proxy and the database run in the brokers' VPC too",
		"Parameters.SubnetIds":           "every function, the proxy, the interface endpoints and a new database's instance use them too",
		"Parameters.CreateVpcEndpoints":  "DynamoDB's gateway and Lambda's interface endpoint besides S3's and Secrets Manager's",
		"Parameters.RouteTableIds":       "the DynamoDB gateway endpoint's too",
		"Rules.EndpointsNeedRouteTables": "names the DynamoDB gateway endpoint too (template-postgres.yaml's rule)",
		"Globals.Function":               "every function in the VPC with the functions' group, where the database is and no secret (STORE postgres), instead of JOBS_TABLE",
		"Resources.DataKey":              "RDS and Secrets Manager may use it too (template-postgres.yaml's key)",
		"Resources.IntakeFunction":       "after the schema; RELAY_FUNCTION_NAME (template-postgres.yaml's intake)",
		"Resources.IntakeRole":           "the database through the proxy instead of the Jobs table; the relay's nudge; the VPC's network interfaces (template-postgres.yaml's)",
		"Resources.RelayFunction":        "no stream event: nudged by the writers, and RelaySchedule every minute; a reserved concurrency; after the schema",
		"Resources.RelayRole":            "the outbox in the database instead of the stream, and no on-failure queue",
		"Resources.WorkerFunction":       "after the schema; the quarantine in the database; RELAY_FUNCTION_NAME",
		"Resources.WorkerRole":           "the jobs and the quarantine in the database instead of their tables; the relay's nudge; the function's own network interfaces in the VPC",
		"Resources.ProjectorFunction":    "after the schema; the views, totals and quarantine in the database",
		"Resources.ProjectorRole":        "the views, totals, jobs and quarantine in the database instead of their tables; the function's own network interfaces in the VPC",
		"Resources.SweeperFunction":      "after the schema; the views, totals and quarantine in the database; RELAY_FUNCTION_NAME",
		"Resources.SweeperRole":          "the jobs, views, totals and quarantine in the database instead of their tables and indexes; the relay's nudge; the VPC's network interfaces (template-postgres.yaml's)",
		"Resources.OperatorDashboard":    "the relay's oldest outbox row and no totals conflicts (template-postgres.yaml's dashboard)",
	},
	// DynamoDB's arbiter, as template-postgres.yaml leaves out of
	// template.yaml's: template-kafka.yaml has the same.
	baseOnly: postgresVariant.baseOnly,
}

var kafkaPostgresOnPostgres = variant{
	file: kafkaPostgresFile,
	base: "template-postgres.yaml",
	changes: map[string]string{
		"Parameters.VpcId":                 "the brokers' VPC, where the functions, the proxy and the database run",
		"Parameters.SubnetIds":             "they reach the brokers, and a self-managed mapping's pollers use the first two",
		"Parameters.CreateVpcEndpoints":    "no SQS endpoint (no queue); Secrets Manager's for a self-managed cluster",
		"Parameters.RouteTableIds":         "the cluster's subnets' route tables too",
		"Resources.FunctionsSecurityGroup": "its HTTPS rule's description names no SQS",
		"Resources.EndpointsSecurityGroup": "the Lambda endpoint's alone (no SQS endpoint)",
		"Globals.Function":                 "TRANSPORT kafka, and the worker's timeout within Lambda's 840 s for Kafka (template-kafka.yaml's)",
		"Resources.RelayFunction":          "produces to the topics: the brokers, the topics and their partitions, with the Kafka clients' group too",
		"Resources.RelayRole":              "MSK IAM or the SCRAM secret instead of the queues",
		"Resources.WorkerFunction":         "the commands topic and the attempts' threshold (template-kafka.yaml's), no queue",
		"Resources.WorkerRole":             "its Kafka mapping's permissions instead of the queue's; parked bodies by topic",
		"Resources.ProjectorFunction":      "the events topic and the attempts' thresholds (template-kafka.yaml's), no queue",
		"Resources.ProjectorRole":          "its Kafka mapping's permissions instead of the queue's; parked bodies by topic",
		"Resources.SweeperFunction":        "counts the topics' held keys, not the queues'",
		"Resources.OperatorDashboard":      "held keys per topic, the records the mappings gave up and the worker's consumer lag instead of the queues (template-kafka.yaml's dashboard)",
	},
	// The SQS endpoint, and the SQS mappings' concurrency, whose default
	// template-postgres.yaml changes from template.yaml's (a Kafka
	// mapping scales by partitions).
	baseOnly: []string{"Resources.SqsEndpoint", "Parameters.WorkerMaxConcurrency", "Parameters.ProjectorMaxConcurrency"},
}

// postgresEntries are template-postgres.yaml's PostgreSQL entries: those
// template.yaml has not, and those it has in another form.
func postgresEntries(repo, pg *samtemplate.Template) map[string]any {
	inRepo := templateEntries(repo)
	out := map[string]any{}
	for name, v := range templateEntries(pg) {
		if _, shared := inRepo[name]; !shared || postgresVariant.changes[name] != "" {
			out[name] = v
		}
	}
	return out
}

// kafkaPostgresDrift says where tpl departs from template-kafka.yaml or
// from template-postgres.yaml's PostgreSQL entries other than as the two
// variants say.
func kafkaPostgresDrift(t *testing.T, tpl *samtemplate.Template) []string {
	t.Helper()
	return slices.Concat(kafkaPostgresOnKafka.drift(loadKafkaTemplate(t), tpl),
		kafkaPostgresOnPostgres.driftFrom(postgresEntries(loadRepoTemplate(t), loadPostgresTemplate(t)), tpl))
}

func TestKafkaPostgresTemplateSharesItsBasesEntries(t *testing.T) {
	t.Parallel()
	require.Empty(t, kafkaPostgresDrift(t, loadKafkaPostgresTemplate(t)))
	// Nothing here is its own: every entry comes from one of the two.
	pg := postgresEntries(loadRepoTemplate(t), loadPostgresTemplate(t))
	for name := range templateEntries(loadKafkaPostgresTemplate(t)) {
		_, kafka := templateEntries(loadKafkaTemplate(t))[name]
		_, postgres := pg[name]
		require.True(t, kafka || postgres, "%s is neither template-kafka.yaml's nor a PostgreSQL entry of template-postgres.yaml", name)
	}
}

// Each way the copies can drift is caught.
func TestKafkaPostgresSharedEntriesCatchEachDrift(t *testing.T) {
	t.Parallel()
	requireEachBreakNamed(t, kafkaPostgresTemplatePath, func(tpl *samtemplate.Template) []string { return kafkaPostgresDrift(t, tpl) }, []breakCase{
		{"a Kafka mapping changed", "      MaximumRetryAttempts: 9 #", "      MaximumRetryAttempts: 8 #",
			"Resources.ProjectorEventsMapping differs from template-kafka.yaml's: mirror the change in template-kafka-postgres.yaml"},
		{"a topic parameter changed", "    Default: fifoworker-events\n", "    Default: events\n", "Parameters.EventsTopicName differs from template-kafka.yaml's"},
		{"the Kafka clients' group dropped", "  KafkaClientSecurityGroup:\n", "  KafkaClientsSecurityGroup:\n",
			"Resources.KafkaClientSecurityGroup is missing from template-kafka-postgres.yaml"},
		{"a shared table changed", "  ArticlesTable:\n    Type: AWS::DynamoDB::Table\n    DeletionPolicy: Retain", "  ArticlesTable:\n    Type: AWS::DynamoDB::Table\n    DeletionPolicy: Delete",
			"Resources.ArticlesTable differs from template-kafka.yaml's"},
		{"a DynamoDB table kept", "  ArticlesTable:\n", "  JobsTable:\n    Type: AWS::DynamoDB::Table\n  ArticlesTable:\n",
			"Resources.JobsTable is listed as template-kafka.yaml's only, but template-kafka-postgres.yaml has it"},
		{"the proxy changed", "      RequireTLS: true", "      RequireTLS: false", "Resources.DatabaseProxy differs from template-postgres.yaml's"},
		{"a database parameter changed", "    Default: \"18.4\"", "    Default: \"18.1\"", "Parameters.DatabaseEngineVersion differs from template-postgres.yaml's"},
		{"the schema dropped", "  DatabaseSchema:\n", "  Schema:\n", "Resources.DatabaseSchema is missing from template-kafka-postgres.yaml"},
		{"intake unlike template-postgres.yaml's", "          RELAY_FUNCTION_NAME: !Ref RelayFunction # a new job's", "          RELAY_FUNCTION: !Ref RelayFunction # a new job's",
			"Resources.IntakeFunction differs from template-postgres.yaml's"},
		{"a changed entry the same again", "        - Description: HTTPS to S3, DynamoDB and Lambda through", "        - Description: HTTPS to S3, DynamoDB, SQS and Lambda through",
			"Resources.FunctionsSecurityGroup is listed as changed (its HTTPS rule's description names no SQS), but is the same in both"},
		{"the SQS endpoint kept", "  LambdaEndpoint:\n", "  SqsEndpoint:\n    Type: AWS::EC2::VPCEndpoint\n  LambdaEndpoint:\n",
			"Resources.SqsEndpoint is listed as template-postgres.yaml's only, but template-kafka-postgres.yaml has it"},
	})
	// A name listed that its base does not have is a stale list.
	stale := kafkaPostgresOnPostgres
	stale.baseOnly = append(slices.Clone(stale.baseOnly), "Resources.CommandsQueue")
	require.Contains(t, stale.driftFrom(postgresEntries(loadRepoTemplate(t), loadPostgresTemplate(t)), loadKafkaPostgresTemplate(t)),
		"Resources.CommandsQueue is listed, but template-postgres.yaml has none")
}
