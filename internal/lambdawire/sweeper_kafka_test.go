package lambdawire

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// On Kafka the sweeper reads the holds, and counts the held keys, under
// the names the consumers' quarantines hold them: the topics
// (pkg/quarantine's KafkaQuarantine keeps a topic's held keys as the
// groups of the store's queue named as the topic, the job id the group),
// which template-kafka.yaml gives the sweeper as it gives the worker and
// the projector. On SQS, the queues' names, from their ARNs.
func TestTheSweeperReadsTheHoldsOfEachTransportsSources(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Load("../../template-kafka.yaml")
	require.NoError(t, err)
	sweeperEnv := templateEnv(t, tpl, "SweeperFunction")
	require.Equal(t, templateEnv(t, tpl, "WorkerFunction")["COMMANDS_TOPIC"], sweeperEnv["COMMANDS_TOPIC"])
	require.Equal(t, templateEnv(t, tpl, "ProjectorFunction")["EVENTS_TOPIC"], sweeperEnv["EVENTS_TOPIC"])
	require.Equal(t, templateEnv(t, tpl, "WorkerFunction")["QUARANTINE_TABLE"], sweeperEnv["QUARANTINE_TABLE"])

	db := DynamoDB(aws.Config{Region: "eu-west-1"})
	env := startup.NewEnvFrom(sweeperEnv)
	holds, commands, evts := sweeperQuarantine(env, db)
	require.NoError(t, env.Err())
	require.NotNil(t, holds)
	require.Equal(t, []string{sweeperEnv["COMMANDS_TOPIC"], sweeperEnv["EVENTS_TOPIC"]}, []string{commands, evts})

	env = startup.NewEnvFrom(map[string]string{"QUARANTINE_TABLE": "q",
		"COMMANDS_QUEUE_ARN": "arn:aws:sqs:eu-west-1:123456789012:stack-commands.fifo", "EVENTS_QUEUE_ARN": "arn:aws:sqs:eu-west-1:123456789012:stack-events.fifo",
		// A topic beside SQS's settings is not what the sweeper reads there.
		"COMMANDS_TOPIC": "fifoworker-commands"})
	_, commands, evts = sweeperQuarantine(env, db)
	require.NoError(t, env.Err())
	require.Equal(t, []string{"stack-commands.fifo", "stack-events.fifo"}, []string{commands, evts})
}

// On Kafka, with the quarantine's table, both topics are required, and
// no queue is; a TRANSPORT that is neither is named.
func TestTheKafkaSweeperNamesEveryMissingTopic(t *testing.T) {
	t.Parallel()
	db := DynamoDB(aws.Config{Region: "eu-west-1"})
	env := startup.NewEnvFrom(map[string]string{"TRANSPORT": "kafka", "QUARANTINE_TABLE": "q",
		"COMMANDS_QUEUE_ARN": "arn:aws:sqs:eu-west-1:123456789012:stack-commands.fifo"})
	sweeperQuarantine(env, db)
	require.ErrorContains(t, env.Err(), "COMMANDS_TOPIC is not set")
	require.ErrorContains(t, env.Err(), "EVENTS_TOPIC is not set")
	require.NotContains(t, env.Err().Error(), "QUEUE_ARN")

	env = startup.NewEnvFrom(map[string]string{"TRANSPORT": "kafka"})
	holds, _, _ := sweeperQuarantine(env, db)
	require.NoError(t, env.Err(), "no quarantine, no topic needed")
	require.Nil(t, holds)

	env = startup.NewEnvFrom(map[string]string{"TRANSPORT": "kinesis", "QUARANTINE_TABLE": "q"})
	sweeperQuarantine(env, db)
	require.ErrorContains(t, env.Err(), `TRANSPORT: "kinesis" is neither sqs nor kafka`)
}
