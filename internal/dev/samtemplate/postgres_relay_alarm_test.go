package samtemplate_test

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// The relay's lag alarm on PostgreSQL, and the parameter its threshold is.
const (
	relayAgeAlarm     = "RelayOutboxAgeAlarm"
	relayAgeThreshold = "RelayOutboxAgeAlarmSeconds"
)

// relayAgeAlarmProblems says what keeps tpl's alarms on the relay's
// metrics (pgsource.MetricsNamespace) from watching the age pgsource
// writes: the one alarm, on pgsource.MetricOldestAge under the relay
// function's name (the dimension pgrelay and kafkarelay give it), its
// Maximum over minutes, its threshold the parameter (a number with a
// default), and missing data breaching (a relay that stopped reports no
// age: the schedule runs it every minute, so five empty periods are a
// relay stopped).
func relayAgeAlarmProblems(tpl *samtemplate.Template) []string {
	var out []string
	var alarms []string
	for _, name := range tpl.OfType("AWS::CloudWatch::Alarm") {
		if tpl.Resources[name].Properties["Namespace"] == pgsource.MetricsNamespace {
			alarms = append(alarms, name)
		}
	}
	if !reflect.DeepEqual(alarms, []string{relayAgeAlarm}) {
		return append(out, fmt.Sprintf("the alarms on %s are %v, want [%s]", pgsource.MetricsNamespace, alarms, relayAgeAlarm))
	}
	p := tpl.Resources[relayAgeAlarm].Properties
	want := map[string]any{
		"MetricName":         pgsource.MetricOldestAge,
		"Dimensions":         []any{map[string]any{"Name": "FunctionName", "Value": map[string]any{"Ref": "RelayFunction"}}},
		"Statistic":          "Maximum",
		"Threshold":          map[string]any{"Ref": relayAgeThreshold},
		"ComparisonOperator": "GreaterThanThreshold",
		"TreatMissingData":   "breaching",
	}
	for k, v := range want {
		if !reflect.DeepEqual(p[k], v) {
			out = append(out, fmt.Sprintf("%s: %s is %v, want %v", relayAgeAlarm, k, p[k], v))
		}
	}
	param, ok := tpl.Parameters[relayAgeThreshold]
	switch {
	case !ok:
		out = append(out, fmt.Sprintf("parameter %s: missing", relayAgeThreshold))
	case param.Type != "Number":
		out = append(out, fmt.Sprintf("parameter %s: type %v, want Number", relayAgeThreshold, param.Type))
	}
	if d, err := strconv.Atoi(fmt.Sprint(param.Default)); ok && (err != nil || d < 1) {
		out = append(out, fmt.Sprintf("parameter %s: default %v is not a positive number of seconds", relayAgeThreshold, param.Default))
	}
	return out
}

// Both PostgreSQL templates alarm on the age of the oldest outbox row the
// relay reports, the metric pgsource writes, under the name it writes.
func TestThePostgresTemplatesAlarmOnTheRelaysOutboxAge(t *testing.T) {
	t.Parallel()
	for _, path := range []string{postgresTemplatePath, kafkaPostgresTemplatePath} {
		tpl, err := samtemplate.Load(path)
		require.NoError(t, err)
		require.Empty(t, relayAgeAlarmProblems(tpl), path)
	}
}

// Each way the alarm can stop watching the metric is caught.
func TestRelayAgeAlarmChecksCatchEachBreak(t *testing.T) {
	t.Parallel()
	for _, path := range []string{postgresTemplatePath, kafkaPostgresTemplatePath} {
		requireEachBreakNamed(t, path, relayAgeAlarmProblems, []breakCase{
			{"another metric", "MetricName: OutboxOldestAgeSeconds", "MetricName: OutboxOldestAge", "MetricName is OutboxOldestAge"},
			{"another namespace", "      Namespace: fifoworker/relay\n", "      Namespace: fifoworker/outbox\n", "the alarms on fifoworker/relay are []"},
			{"a fixed threshold", "      Threshold: !Ref RelayOutboxAgeAlarmSeconds\n", "      Threshold: 60\n", "Threshold is 60"},
			{"missing data cleared", "      TreatMissingData: breaching # five minutes without a run", "      TreatMissingData: notBreaching # five minutes without a run", "TreatMissingData is notBreaching"},
			{"no parameter", "  RelayOutboxAgeAlarmSeconds:\n    Type: Number\n    Default: 60\n", "  RelayOutboxAgeAlarmSecondz:\n    Type: Number\n    Default: 60\n", "parameter RelayOutboxAgeAlarmSeconds: missing"},
		})
	}
}
