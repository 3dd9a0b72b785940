//go:build integration

package lambdawire

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/testenv"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The sweeper's run reports the held groups of both queues as the gauge
// the held-groups alarms watch: 1 for the commands queue with a group
// held, 0 (not nothing) for the events queue.
func TestTheSweeperReportsHeldGroups(t *testing.T) {
	t.Parallel()
	cfg := testenv.Config(t)
	table := testenv.TemplateTable(t, DynamoDB(cfg), "QuarantineTable")

	commands := "arn:aws:sqs:eu-west-1:123456789012:" + testenv.Name(t, "c") + ".fifo"
	events_ := "arn:aws:sqs:eu-west-1:123456789012:" + testenv.Name(t, "e") + ".fifo"
	q := quarantine.New(quarantine.NewDynamoStore(DynamoDB(cfg), table), commands)
	msg := events.SQSMessage{MessageId: "m1", Body: "x", EventSourceARN: commands,
		Attributes: map[string]string{"MessageGroupId": "job-1", "SequenceNumber": "1001"}}
	_, err := q.Park(t.Context(), "job-1", []*events.SQSMessage{&msg}, errors.New("boom"), true)
	require.NoError(t, err)

	var buf testenv.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	env := NewEnvFrom(map[string]string{"QUARANTINE_TABLE": table, "COMMANDS_QUEUE_ARN": commands, "EVENTS_QUEUE_ARN": events_})
	report := heldGroups(env, DynamoDB(cfg), log)
	require.NoError(t, env.Err())
	report(t.Context())

	got := map[string]float64{}
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		require.Contains(t, rec, "_aws", "an EMF record: %s", line)
		got[rec["Queue"].(string)] = rec[quarantine.MetricHeldGroups].(float64)
	}
	cname, _ := quarantine.QueueName(commands)
	ename, _ := quarantine.QueueName(events_)
	require.Equal(t, map[string]float64{cname: 1, ename: 0}, got)

	// Without the table, nothing is reported and nothing is required.
	var none testenv.Buffer
	env = NewEnvFrom(map[string]string{})
	heldGroups(env, DynamoDB(cfg), slog.New(slog.NewJSONHandler(&none, nil)))(t.Context())
	require.NoError(t, env.Err())
	require.Empty(t, none.String())
}
