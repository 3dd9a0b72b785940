package lambdawire

import (
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func TestSweeperNamesEveryMisconfiguredSetting(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	_, err := Sweeper(startup.NewEnvFrom(map[string]string{
		"MAX_GENERATIONS": "5", "SWEEP_GRACE": "soon", "SWEEP_STUCK_AFTER": "10ms", "SWEEP_MAX_ITEMS": "0",
		"SWEEP_REPAIR_AFTER": "59s", "SWEEP_RECHECK_AFTER": "9m", "SWEEP_REPAIR_BUDGET": "-1s",
	}), aws.Config{}, log)
	require.ErrorContains(t, err, "JOBS_TABLE is not set")
	require.ErrorContains(t, err, "CANDIDATES_BUCKET is not set")
	require.ErrorContains(t, err, "VIEWS_TABLE is not set")
	require.ErrorContains(t, err, "TOTALS_TABLE is not set")
	require.ErrorContains(t, err, `SWEEP_REPAIR_AFTER="59s"`)
	require.ErrorContains(t, err, `SWEEP_RECHECK_AFTER="9m"`)
	require.ErrorContains(t, err, `SWEEP_REPAIR_BUDGET="-1s"`)
	require.ErrorContains(t, err, `MAX_GENERATIONS="5"`)
	require.ErrorContains(t, err, `SWEEP_GRACE="soon"`)
	require.ErrorContains(t, err, `SWEEP_STUCK_AFTER="10ms"`)
	require.ErrorContains(t, err, `SWEEP_MAX_ITEMS="0"`)

	set := map[string]string{
		"JOBS_TABLE": "jobs", "CANDIDATES_BUCKET": "candidates", "VIEWS_TABLE": "views", "TOTALS_TABLE": "totals",
		"SWEEP_GRACE": "1s", "SWEEP_REPAIR_AFTER": "1h", "SWEEP_RECHECK_AFTER": "1h",
	}
	_, err = Sweeper(startup.NewEnvFrom(set), aws.Config{Region: "eu-west-1"}, log)
	require.ErrorContains(t, err, "SWEEP_RECHECK_AFTER: 1h0m0s is not beyond SWEEP_REPAIR_AFTER 1h0m0s")

	set["SWEEP_RECHECK_AFTER"], set["SWEEP_REPAIR_BUDGET"] = "61m", "0s"
	h, err := Sweeper(startup.NewEnvFrom(set), aws.Config{Region: "eu-west-1"}, log)
	require.NoError(t, err)
	require.NotNil(t, h)

	// With the quarantine's table, both queues are required: the holds
	// are read by queue name.
	set["QUARANTINE_TABLE"], set["EVENTS_QUEUE_ARN"] = "quarantine", "arn:aws:sqs:eu-west-1:123456789012:"
	_, err = Sweeper(startup.NewEnvFrom(set), aws.Config{Region: "eu-west-1"}, log)
	require.ErrorContains(t, err, "COMMANDS_QUEUE_ARN is not set")
	require.ErrorContains(t, err, "EVENTS_QUEUE_ARN")
	set["COMMANDS_QUEUE_ARN"] = "arn:aws:sqs:eu-west-1:123456789012:stack-commands.fifo"
	set["EVENTS_QUEUE_ARN"] = "arn:aws:sqs:eu-west-1:123456789012:stack-events.fifo"
	_, err = Sweeper(startup.NewEnvFrom(set), aws.Config{Region: "eu-west-1"}, log)
	require.NoError(t, err)
}

// The sweeper's alarms watch the gauges it logs: their namespace, metric
// names and dimension are the package's, and the dimension's value is the
// function's name, which Lambda gives the function as
// AWS_LAMBDA_FUNCTION_NAME. (How they treat a missing gauge is
// internal/dev/samtemplate's TestTemplateGaugeAlarmsBreachWhenTheGaugeIsMissing.)
func TestTemplateAlarmsOnTheSweepersGauges(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Load("../../template.yaml")
	require.NoError(t, err)
	found := map[string]any{}
	for _, name := range tpl.OfType("AWS::CloudWatch::Alarm") {
		p := tpl.Resources[name].Properties
		if p["Namespace"] != sweeper.MetricsNamespace {
			continue
		}
		found[name] = p["MetricName"]
		require.Equal(t, []any{map[string]any{"Name": "FunctionName", "Value": map[string]any{"Ref": "SweeperFunction"}}},
			p["Dimensions"], name)
		require.Equal(t, "Maximum", p["Statistic"], name)
		require.Equal(t, "GreaterThanThreshold", p["ComparisonOperator"], name)
	}
	require.Equal(t, map[string]any{
		"SweeperRepairLagAlarm": sweeper.MetricRepairLag, "SweeperUnmeasuredAlarm": sweeper.MetricUnmeasured,
	}, found)
}
