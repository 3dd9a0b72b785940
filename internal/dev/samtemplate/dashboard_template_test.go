package samtemplate_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The operator's dashboard (OperatorDashboard) shows metrics the code
// writes or AWS publishes, and nothing else: a widget on a metric nobody
// writes (a misspelt name, a renamed constant, the wrong namespace) is an
// empty graph an operator takes for quiet.

// metricID is a metric's namespace and name.
type metricID struct{ namespace, name string }

// ourMetrics are the metrics the functions write (EMF), read from the
// code's constants, each with the name of its one dimension.
func ourMetrics() map[metricID]string {
	return map[metricID]string{
		{jobs.MetricsNamespace, jobs.MetricCreated}:                jobs.MetricsDimension,
		{jobs.MetricsNamespace, jobs.MetricCompleted}:              jobs.MetricsDimension,
		{jobs.MetricsNamespace, jobs.MetricFailed}:                 jobs.MetricsDimension,
		{jobs.MetricsNamespace, jobs.MetricLatency}:                jobs.MetricsDimension,
		{jobs.MetricsNamespace, jobs.MetricTotalsConflicts}:        jobs.MetricsDimension,
		{quarantine.MetricsNamespace, quarantine.MetricHeldGroups}: "Queue",
		{pgsource.MetricsNamespace, pgsource.MetricOldestAge}:      "FunctionName",
	}
}

// awsMetrics are the AWS metrics a dashboard may show, each with the
// dimensions it is read by (comma-separated), as AWS documents them: SQS's
// "Available CloudWatch metrics for Amazon SQS" (per queue, QueueName);
// Lambda's event source mapping metrics (IteratorAge for stream sources,
// OffsetLag for Kafka ones, per FunctionName, as the Kafka templates'
// lag alarms read it); S3's request metrics (PutRequests per BucketName and
// FilterId, as KafkaFailuresAlarm reads it).
var awsMetrics = map[metricID]string{
	{"AWS/SQS", "ApproximateNumberOfMessagesVisible"}: "QueueName",
	{"AWS/SQS", "ApproximateAgeOfOldestMessage"}:      "QueueName",
	{"AWS/Lambda", "IteratorAge"}:                     "FunctionName",
	{"AWS/Lambda", "OffsetLag"}:                       "FunctionName",
	{"AWS/S3", "PutRequests"}:                         "BucketName,FilterId",
}

// shown is one metric of a widget: its id, its dimensions' names
// (comma-separated) and first value (the Sub variable it names), its
// statistic and period.
type shown struct {
	id         metricID
	dim, value string
	stat       string
	period     int
}

// dashboardMetrics decodes the dashboard's body: its Fn::Sub string with
// each variable (subVariable, the evaluator's) replaced by its own name, so that a dimension's value says
// which resource it names. It reports a variable that names no resource
// (nor a pseudo parameter) of tpl.
func dashboardMetrics(tpl *samtemplate.Template) ([]shown, []string, error) {
	r, ok := tpl.Resources["OperatorDashboard"]
	if !ok || r.Type != "AWS::CloudWatch::Dashboard" {
		return nil, nil, fmt.Errorf("no OperatorDashboard of type AWS::CloudWatch::Dashboard")
	}
	sub, _ := r.Properties["DashboardBody"].(map[string]any)
	body, ok := sub["Fn::Sub"].(string)
	if !ok {
		return nil, nil, fmt.Errorf("DashboardBody is not a !Sub of a string: %v", r.Properties["DashboardBody"])
	}
	var problems []string
	for _, m := range subVariable.FindAllStringSubmatch(body, -1) {
		name, _, _ := strings.Cut(m[1], ".")
		_, resource := tpl.Resources[name]
		_, parameter := tpl.Parameters[name]
		if !resource && !parameter && !strings.HasPrefix(name, "AWS::") {
			problems = append(problems, fmt.Sprintf("${%s} names no resource nor parameter of the template", m[1]))
		}
	}
	var dash struct {
		Widgets []struct {
			Type       string `json:"type"`
			Properties struct {
				Title   string  `json:"title"`
				Region  string  `json:"region"`
				Stat    string  `json:"stat"`
				Period  int     `json:"period"`
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(subVariable.ReplaceAllString(body, "$1")), &dash); err != nil {
		return nil, nil, fmt.Errorf("the body is not JSON: %w", err)
	}
	var out []shown
	for _, w := range dash.Widgets {
		p := w.Properties
		if w.Type != "metric" || p.Region != "AWS::Region" {
			problems = append(problems, fmt.Sprintf("widget %q: type %q, region %q: want a metric widget in the stack's region", p.Title, w.Type, p.Region))
		}
		for _, row := range p.Metrics {
			s, err := decodeRow(row, p.Stat, p.Period)
			if err != nil {
				problems = append(problems, fmt.Sprintf("widget %q: %v", p.Title, err))
				continue
			}
			out = append(out, s)
		}
	}
	return out, problems, nil
}

// decodeRow decodes one row of a widget's metrics: namespace, name, the
// dimensions' names and values, and optional rendering options (stat),
// the widget's stat and period otherwise. The dashboard's rows are
// written out in full: CloudWatch's "." (as the row above) is not used.
func decodeRow(row []any, stat string, period int) (shown, error) {
	var strs []string
	for i, v := range row {
		if opts, ok := v.(map[string]any); ok && i == len(row)-1 {
			if s, ok := opts["stat"].(string); ok {
				stat = s
			}
			continue
		}
		s, ok := v.(string)
		if !ok {
			return shown{}, fmt.Errorf("row %v: element %d is not a string", row, i)
		}
		strs = append(strs, s)
	}
	if len(strs) < 4 || len(strs)%2 != 0 {
		return shown{}, fmt.Errorf("row %v: want namespace, name and dimensions (name, value)", row)
	}
	var names []string
	for i := 2; i < len(strs); i += 2 {
		names = append(names, strs[i])
	}
	return shown{id: metricID{strs[0], strs[1]}, dim: strings.Join(names, ","), value: strs[3], stat: stat, period: period}, nil
}

// widgetProblems says which shown metrics are neither ours nor AWS's, or
// are read by a dimension they are not written with.
func widgetProblems(metrics []shown) []string {
	ours := ourMetrics()
	var out []string
	for _, m := range metrics {
		dim, ok := ours[m.id]
		if !ok {
			dim, ok = awsMetrics[m.id]
		}
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s %s is neither a metric the code writes nor one AWS publishes", m.id.namespace, m.id.name))
		case dim != m.dim:
			out = append(out, fmt.Sprintf("%s %s is shown by dimension %s, written by %s", m.id.namespace, m.id.name, m.dim, dim))
		}
	}
	return out
}

// required is a widget metric the issue asks for: the metric, the resource
// its dimension names, the statistic and the period (0: any).
type required struct {
	id     metricID
	value  string
	stat   string
	period int
}

func (r required) String() string {
	return fmt.Sprintf("%s %s of %s (%s, period %d)", r.id.namespace, r.id.name, r.value, r.stat, r.period)
}

// sqsDashboard is what template.yaml's dashboard must show: jobs created,
// completed and failed per minute; job latency p50 and p99; held groups
// per queue; the DLQs' depths; the oldest command's age; the relay's
// iterator age; the totals' conflicts.
func sqsDashboard() []required {
	perMinute := func(name, fn string) required {
		return required{metricID{jobs.MetricsNamespace, name}, fn, "Sum", 60}
	}
	return []required{
		perMinute(jobs.MetricCreated, "IntakeFunction"),
		perMinute(jobs.MetricCompleted, "ProjectorFunction"),
		perMinute(jobs.MetricFailed, "ProjectorFunction"),
		{metricID{jobs.MetricsNamespace, jobs.MetricLatency}, "WorkerFunction", "p50", 0},
		{metricID{jobs.MetricsNamespace, jobs.MetricLatency}, "WorkerFunction", "p99", 0},
		{metricID{quarantine.MetricsNamespace, quarantine.MetricHeldGroups}, "CommandsQueue.QueueName", "Maximum", 0},
		{metricID{quarantine.MetricsNamespace, quarantine.MetricHeldGroups}, "EventsQueue.QueueName", "Maximum", 0},
		{metricID{"AWS/SQS", "ApproximateNumberOfMessagesVisible"}, "CommandsDLQ.QueueName", "Maximum", 0},
		{metricID{"AWS/SQS", "ApproximateNumberOfMessagesVisible"}, "EventsDLQ.QueueName", "Maximum", 0},
		{metricID{"AWS/SQS", "ApproximateAgeOfOldestMessage"}, "CommandsQueue.QueueName", "Maximum", 0},
		{metricID{"AWS/Lambda", "IteratorAge"}, "RelayFunction", "Maximum", 0},
		perMinute(jobs.MetricTotalsConflicts, "ProjectorFunction"),
	}
}

// postgresDashboard is template-postgres.yaml's: the relay has no stream,
// so its outbox's oldest row stands for the iterator age; the PostgreSQL
// totals write has no TransactionConflict to count.
func postgresDashboard() []required {
	out := slices.DeleteFunc(sqsDashboard(), func(r required) bool {
		return r.id.name == "IteratorAge" || r.id.name == jobs.MetricTotalsConflicts
	})
	return append(out, required{metricID{pgsource.MetricsNamespace, pgsource.MetricOldestAge}, "RelayFunction", "Maximum", 0})
}

// kafkaDashboard is template-kafka.yaml's: no queues, so the held groups
// are counted per topic, the records the mappings gave up (their S3
// on-failure destination's writes, KafkaFailuresAlarm's metric) stand for
// the DLQs' depths, and the worker's consumer lag (OffsetLag, as
// CommandsLagAlarm reads it) for the oldest command's age.
func kafkaDashboard() []required {
	out := slices.DeleteFunc(sqsDashboard(), func(r required) bool {
		return r.id.namespace == "AWS/SQS" || r.id.name == quarantine.MetricHeldGroups
	})
	return append(out,
		required{metricID{quarantine.MetricsNamespace, quarantine.MetricHeldGroups}, "CommandsTopicName", "Maximum", 0},
		required{metricID{quarantine.MetricsNamespace, quarantine.MetricHeldGroups}, "EventsTopicName", "Maximum", 0},
		required{metricID{"AWS/S3", "PutRequests"}, "KafkaFailuresBucket", "Sum", 0},
		required{metricID{"AWS/Lambda", "OffsetLag"}, "WorkerFunction", "Maximum", 0})
}

// kafkaPostgresDashboard is template-kafka-postgres.yaml's: Kafka's, with
// PostgreSQL's relay and totals (postgresDashboard).
func kafkaPostgresDashboard() []required {
	out := slices.DeleteFunc(kafkaDashboard(), func(r required) bool {
		return r.id.name == "IteratorAge" || r.id.name == jobs.MetricTotalsConflicts
	})
	return append(out, required{metricID{pgsource.MetricsNamespace, pgsource.MetricOldestAge}, "RelayFunction", "Maximum", 0})
}

// dashboardProblems says what is wrong with tpl's dashboard against want.
func dashboardProblems(tpl *samtemplate.Template, want []required) []string {
	metrics, problems, err := dashboardMetrics(tpl)
	if err != nil {
		return []string{err.Error()}
	}
	problems = append(problems, widgetProblems(metrics)...)
	for _, r := range want {
		if !slices.ContainsFunc(metrics, func(m shown) bool {
			return m.id == r.id && m.value == r.value && m.stat == r.stat && (r.period == 0 || m.period == r.period)
		}) {
			problems = append(problems, "no widget shows "+r.String())
		}
	}
	slices.Sort(problems)
	return problems
}

func TestTheDashboardShowsWhatTheIssueAsksFromMetricsThatExist(t *testing.T) {
	t.Parallel()
	require.Empty(t, dashboardProblems(loadRepoTemplate(t), sqsDashboard()))
	require.Empty(t, dashboardProblems(loadPostgresTemplate(t), postgresDashboard()))
	require.Empty(t, dashboardProblems(loadKafkaTemplate(t), kafkaDashboard()))
	require.Empty(t, dashboardProblems(loadKafkaPostgresTemplate(t), kafkaPostgresDashboard()))
}

// Each way the dashboard can go wrong is caught.
func TestTheDashboardCheckCatchesEachMistake(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../../template.yaml")
	require.NoError(t, err)
	src := string(raw)
	for _, c := range []struct{ name, old, new, want string }{
		{"a misspelt metric", `"JobsFailed", "FunctionName"`, `"JobFailed", "FunctionName"`,
			"fifoworker/jobs JobFailed is neither a metric the code writes nor one AWS publishes"},
		{"an AWS metric in another namespace", `["AWS/Lambda", "IteratorAge"`, `["AWS/SQS", "IteratorAge"`,
			"AWS/SQS IteratorAge is neither"},
		{"another dimension", `"HeldGroups", "Queue", "${EventsQueue.QueueName}"`, `"HeldGroups", "QueueName", "${EventsQueue.QueueName}"`,
			"fifoworker/quarantine HeldGroups is shown by dimension QueueName, written by Queue"},
		{"another function", `"JobsCreated", "FunctionName", "${IntakeFunction}"`, `"JobsCreated", "FunctionName", "${WorkerFunction}"`,
			"no widget shows fifoworker/jobs JobsCreated of IntakeFunction"},
		{"a resource that is not there", `"${CommandsDLQ.QueueName}"`, `"${CommandDLQ.QueueName}"`,
			"${CommandDLQ.QueueName} names no resource nor parameter"},
		{"a percentile dropped", `{"stat": "p99", "label": "p99"}`, `{"stat": "p90", "label": "p90"}`,
			"no widget shows fifoworker/jobs JobLatency of WorkerFunction (p99"},
		{"per five minutes", `"stat": "Sum", "period": 60,` + "\n              \"metrics\": [\n                [\"fifoworker/jobs\", \"JobsCreated\"",
			`"stat": "Sum", "period": 300,` + "\n              \"metrics\": [\n                [\"fifoworker/jobs\", \"JobsCreated\"",
			"no widget shows fifoworker/jobs JobsCreated of IntakeFunction (Sum, period 60)"},
		{"a widget dropped", `["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "${CommandsQueue.QueueName}", {"label": "commands"}]`,
			`["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "${EventsQueue.QueueName}", {"label": "events"}]`,
			"no widget shows AWS/SQS ApproximateAgeOfOldestMessage of CommandsQueue.QueueName"},
		{"a body that is not JSON", `"widgets": [`, `"widgets": [[`, "the body is not JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, 1, strings.Count(src, c.old), "the case's text must occur once")
			broken, err := samtemplate.Parse([]byte(strings.Replace(src, c.old, c.new, 1)))
			require.NoError(t, err)
			require.Contains(t, fmt.Sprint(dashboardProblems(broken, sqsDashboard())), c.want)
		})
	}
}
