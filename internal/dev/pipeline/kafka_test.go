package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// kafkaConfig is a Config of template-kafka.yaml as if deployed as stack
// st with the local broker at broker, and the source chosen.
func kafkaConfig(t *testing.T, source, broker string) Config {
	t.Helper()
	tpl, err := samtemplate.Load("../../../template-kafka.yaml")
	require.NoError(t, err)
	p := tpl.Parameters["KafkaSource"]
	p.Default = source
	tpl.Parameters["KafkaSource"] = p
	deployed := &localdeploy.Result{
		Resources: map[string]string{"KafkaFailuresBucket": "st-kafkafailuresbucket", "JobsTable": "st-JobsTable",
			"ArticlesTable": "st-ArticlesTable", "CandidatesBucket": "st-candidatesbucket", "QuarantineTable": "st-QuarantineTable",
			"ViewsTable": "st-ViewsTable", "TotalsTable": "st-TotalsTable"},
		Attributes: map[string]map[string]string{"KafkaFailuresBucket": {"Arn": "arn:aws:s3:::st-kafkafailuresbucket"}},
		Parameters: map[string]string{"KafkaBootstrapServers": broker, "MskClusterArn": localdeploy.LocalMSKClusterARN("eu-west-1", "st")},
	}
	return Config{Template: tpl, Deployed: deployed, StackName: "st", Region: "eu-west-1"}
}

// The Kafka mappings run as template-kafka.yaml declares them
// (AWS::Lambda::EventSourceMapping resources, not SAM events): each
// function's topic, consumer group, batching, retries, bisection, partial
// batch responses and on-failure bucket; MSK or self-managed, both read
// the local broker.
func TestKafkaMappingsAreTheTemplates(t *testing.T) {
	t.Parallel()
	const broker = "127.0.0.1:9092"
	msk := kafkaConfig(t, "msk", broker)
	worker, err := msk.kafkaMappings("worker")
	require.NoError(t, err)
	require.Len(t, worker, 1)
	w := worker[0]
	require.Equal(t, "WorkerCommandsMapping", w.name)
	require.Equal(t, "arn:aws:s3:::st-kafkafailuresbucket", w.onFailure)
	seven := 7
	require.Equal(t, localesm.KafkaConfig{
		BootstrapServers: []string{broker}, Topics: []string{"fifoworker-commands"}, ConsumerGroupID: "st-worker",
		EventSource: localesm.EventSourceMSK, ClusterARN: "arn:aws:kafka:eu-west-1:000000000000:cluster/st/local",
		StartingPosition: localesm.TrimHorizon, BatchSize: 10, MaximumBatchingWindow: localesm.NoBatchingWindow,
		ReportBatchItemFailures: true, BisectBatchOnFunctionError: true, MaximumRetryAttempts: &seven,
	}, w.cfg)

	projector, err := msk.kafkaMappings("projector")
	require.NoError(t, err)
	require.Len(t, projector, 1)
	require.Equal(t, []string{"fifoworker-events"}, projector[0].cfg.Topics)
	require.Equal(t, "st-projector", projector[0].cfg.ConsumerGroupID)
	require.Equal(t, 100, projector[0].cfg.BatchSize)
	require.Equal(t, time.Second, projector[0].cfg.MaximumBatchingWindow)
	require.Equal(t, 9, *projector[0].cfg.MaximumRetryAttempts)
	require.Zero(t, projector[0].cfg.MaximumRecordAge, "-1: no limit")
	for _, fn := range []string{"intake", "relay", "sweeper"} {
		none, err := msk.kafkaMappings(fn)
		require.NoError(t, err, fn)
		require.Empty(t, none, fn)
	}

	selfManaged := kafkaConfig(t, "self-managed", broker)
	worker, err = selfManaged.kafkaMappings("worker")
	require.NoError(t, err)
	require.Equal(t, localesm.EventSourceSelfManagedKafka, worker[0].cfg.EventSource)
	require.Empty(t, worker[0].cfg.ClusterARN)
	require.Equal(t, []string{broker}, worker[0].cfg.BootstrapServers, "the endpoints, the template's brokers: the local broker")
	require.Equal(t, "st-worker", worker[0].cfg.ConsumerGroupID)
}

// The relay produces to the local broker, which takes no authentication:
// the template's SASL mechanism and secret are not given to it locally.
// Every function is told its transport.
func TestKafkaFunctionsReachTheLocalBrokerWithoutAuthentication(t *testing.T) {
	t.Parallel()
	for _, source := range []string{"msk", "self-managed"} {
		cfg := kafkaConfig(t, source, "127.0.0.1:9092")
		env, err := cfg.settings("relay", "")
		require.NoError(t, err, source)
		require.Equal(t, "127.0.0.1:9092", env["KAFKA_BOOTSTRAP_SERVERS"], source)
		require.NotContains(t, env, "KAFKA_SASL_MECHANISM", source)
		require.NotContains(t, env, "KAFKA_SECRET_ARN", source)
		require.Equal(t, "fifoworker-commands", env["COMMANDS_TOPIC"], source)
		for _, fn := range Functions {
			env, err := cfg.settings(fn, "")
			require.NoError(t, err, fn)
			require.Equal(t, "kafka", env["TRANSPORT"], fn)
		}
	}
}

// A template's transport is its functions' TRANSPORT: template.yaml sets
// none (SQS), template-kafka.yaml "kafka"; the demo builds the bootstraps
// for it before anything runs.
func TestTemplateTransportIsTheFunctionsTransport(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]string{"template.yaml": "sqs", "template-kafka.yaml": "kafka"} {
		tpl, err := samtemplate.Load("../../../" + file)
		require.NoError(t, err)
		require.Equal(t, want, TemplateTransport(tpl), file)
	}
}
