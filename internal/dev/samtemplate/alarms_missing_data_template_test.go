package samtemplate_test

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// sweeperSchedule is how often the template runs SweeperFunction: its one
// Schedule event's rate.
func sweeperSchedule(t *testing.T, tpl *samtemplate.Template) time.Duration {
	t.Helper()
	var every []time.Duration
	for _, ev := range asMap(tpl.Resources["SweeperFunction"].Properties["Events"]) {
		e := asMap(ev)
		if e["Type"] != "Schedule" {
			continue
		}
		m := regexp.MustCompile(`^rate\((\d+) minutes?\)$`).FindStringSubmatch(fmt.Sprint(asMap(e["Properties"])["Schedule"]))
		require.NotNil(t, m, "the sweeper's schedule is a rate in minutes: %v", e)
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		every = append(every, time.Duration(n)*time.Minute)
	}
	require.Len(t, every, 1, "one schedule")
	return every[0]
}

// gaugeAlarmProblem says what would let alarm, on a gauge the sweeper
// writes once per run, clear because the gauge stopped coming (its count
// failed, or the sweeper stopped running), or fire because a normal run
// came late: "" when nothing. Missing data must breach, and a period must
// be long enough to hold a run whatever its start time and duration
// within the schedule: twice the schedule's interval.
//
// CloudWatch fills missing data points with the alarm's TreatMissingData
// only when the evaluation range holds fewer real data points than
// EvaluationPeriods; otherwise it evaluates the most recent real ones
// (CloudWatch User Guide, "How alarm state is evaluated when data is
// missing"). So a breaching alarm of one period alarms once no run has
// reported for its evaluation range, and a period that always holds a
// run never fills a point for a run that was merely late.
func gaugeAlarmProblem(tpl *samtemplate.Template, alarm string, schedule time.Duration) string {
	p := tpl.Resources[alarm].Properties
	period, _ := strconv.Atoi(fmt.Sprint(p["Period"]))
	switch {
	case p["TreatMissingData"] != "breaching":
		return fmt.Sprintf("%s treats missing data as %v: it would clear (or stay clear) while the gauge is missing", alarm, p["TreatMissingData"])
	case time.Duration(period)*time.Second < 2*schedule:
		return fmt.Sprintf("%s's period %ds is under twice the sweeper's schedule (%s): a late run would leave a period empty", alarm, period, schedule)
	case p["Statistic"] != "Maximum":
		return fmt.Sprintf("%s's statistic is %v: a gauge's alarm takes the period's Maximum", alarm, p["Statistic"])
	}
	return ""
}

// The alarms on the sweeper's gauges (the held groups of each queue, the
// repair cursor's lag) and on the count of gauges it could not measure do
// not clear because the measuring stopped: missing data breaches, with a
// period that holds a run even when one starts late; and a run that
// cannot measure a gauge says so at once through UnmeasuredGauges.
func TestTemplateGaugeAlarmsBreachWhenTheGaugeIsMissing(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	schedule := sweeperSchedule(t, tpl)
	require.Equal(t, 5*time.Minute, schedule)

	gauges := map[string]string{} // alarm → metric
	for _, name := range tpl.OfType("AWS::CloudWatch::Alarm") {
		p := tpl.Resources[name].Properties
		ns, metric := p["Namespace"], fmt.Sprint(p["MetricName"])
		if ns == sweeper.MetricsNamespace || ns == quarantine.MetricsNamespace && metric == quarantine.MetricHeldGroups {
			gauges[name] = metric
		}
	}
	require.Equal(t, map[string]string{
		"CommandsHeldAlarm":      quarantine.MetricHeldGroups,
		"EventsHeldAlarm":        quarantine.MetricHeldGroups,
		"SweeperRepairLagAlarm":  sweeper.MetricRepairLag,
		"SweeperUnmeasuredAlarm": sweeper.MetricUnmeasured,
	}, gauges)
	for name := range gauges {
		require.Empty(t, gaugeAlarmProblem(tpl, name, schedule))
	}
	unmeasured := tpl.Resources["SweeperUnmeasuredAlarm"].Properties
	require.Equal(t, "GreaterThanThreshold", unmeasured["ComparisonOperator"])
	require.Equal(t, 0, asInt(t, unmeasured["Threshold"]), "one gauge unmeasured is one too many")
	require.Equal(t, 1, asInt(t, unmeasured["EvaluationPeriods"]))
	require.Equal(t, []any{map[string]any{"Name": "FunctionName", "Value": map[string]any{"Ref": "SweeperFunction"}}},
		unmeasured["Dimensions"], "the dimension the sweeper writes: its function's name")

	// The check fails on what the template had before, and at the bound.
	for _, tc := range []struct {
		missing string
		period  int
		want    string
	}{
		{"notBreaching", 600, "treats missing data as notBreaching"},
		{"breaching", 300, "period 300s is under twice"},
		{"breaching", 540, "period 540s is under twice"},
		{"breaching", 600, ""},
	} {
		bad, err := samtemplate.Parse(fmt.Appendf(nil, `
Resources:
  A:
    Type: AWS::CloudWatch::Alarm
    Properties: {Statistic: Maximum, Period: %d, TreatMissingData: %s}
`, tc.period, tc.missing))
		require.NoError(t, err)
		got := gaugeAlarmProblem(bad, "A", schedule)
		if tc.want == "" {
			require.Empty(t, got)
			continue
		}
		require.Contains(t, got, tc.want)
	}
}
