package samtemplate_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The held-groups alarms watch the series the sweeper writes: its gauge's
// Queue dimension is the queue's name, which lambdawire takes from the
// end of COMMANDS_QUEUE_ARN or EVENTS_QUEUE_ARN (quarantine.QueueName). An
// alarm whose Queue is the queue's ARN or URL watches a series nobody
// writes, and with missing data breaching it fires for ever while the
// real count goes unwatched. Resolved as a deployment would: each queue's
// ARN, name and URL from its QueueName.
func TestTemplateHeldAlarmsWatchTheQueueNameTheSweeperWrites(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	const stack, region, account = "st", "eu-west-1", localdeploy.LocalAccountID
	res := &localdeploy.Result{Resources: map[string]string{}, Attributes: map[string]map[string]string{}}
	for _, q := range tpl.OfType("AWS::SQS::Queue") {
		name, err := localdeploy.Resolve(tpl, res, stack, region, tpl.Resources[q].Properties["QueueName"])
		require.NoError(t, err, q)
		url := fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", region, account, name)
		res.Resources[q] = url
		res.Attributes[q] = map[string]string{"Arn": fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, account, name), "QueueName": fmt.Sprint(name), "QueueUrl": url}
	}
	env := asMap(asMap(tpl.Resources["SweeperFunction"].Properties["Environment"])["Variables"])
	for alarm, variable := range map[string]string{"CommandsHeldAlarm": "COMMANDS_QUEUE_ARN", "EventsHeldAlarm": "EVENTS_QUEUE_ARN"} {
		arn, err := localdeploy.Resolve(tpl, res, stack, region, env[variable])
		require.NoError(t, err, variable)
		written, err := quarantine.QueueName(fmt.Sprint(arn))
		require.NoError(t, err, variable)

		props := tpl.Resources[alarm].Properties
		require.Equal(t, quarantine.MetricsNamespace, props["Namespace"], alarm)
		require.Equal(t, quarantine.MetricHeldGroups, props["MetricName"], alarm)
		dims, _ := props["Dimensions"].([]any)
		require.Len(t, dims, 1, "%s: the gauge has the one dimension Queue", alarm)
		dim := asMap(dims[0])
		require.Equal(t, "Queue", dim["Name"], alarm)
		watched, err := localdeploy.Resolve(tpl, res, stack, region, dim["Value"])
		require.NoError(t, err, alarm)
		require.Equal(t, written, watched, "%s watches Queue=%v; the sweeper writes Queue=%s (from %s)", alarm, watched, written, variable)
	}
}
