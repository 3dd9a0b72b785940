package samtemplate_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The HTTP API logs every request, those its JWT authorizer refuses (401)
// and those it throttles (429) included, which never reach a function: one
// JSON line each, with the request id intake's log also carries, who
// called (source IP, user agent, the token's subject), what and how it
// ended (route, status, the authorizer's or the integration's error), into
// a log group of its own with the stack's retention.
func TestTemplateTheHttpApiLogsEveryRequest(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	settings := asMap(tpl.Resources["JobsApi"].Properties["AccessLogSettings"])
	require.NotNil(t, settings, "JobsApi has no AccessLogSettings")
	group := getAttTarget(settings["DestinationArn"])
	require.Equal(t, "AWS::Logs::LogGroup", tpl.Resources[group].Type, "the destination is a log group of this template")
	require.Equal(t, ref("LogRetentionDays"), tpl.Resources[group].Properties["RetentionInDays"])

	format, ok := settings["Format"].(string)
	require.True(t, ok, "a literal format: %v", settings["Format"])
	var fields map[string]string
	require.NoError(t, json.Unmarshal([]byte(format), &fields), "one JSON object per request: %s", format)
	for name, variable := range map[string]string{
		"requestId":        "$context.requestId",
		"sourceIp":         "$context.identity.sourceIp",
		"userAgent":        "$context.identity.userAgent",
		"sub":              "$context.authorizer.claims.sub",
		"authorizerError":  "$context.authorizer.error",
		"routeKey":         "$context.routeKey",
		"status":           "$context.status",
		"requestTime":      "$context.requestTimeEpoch",
		"integrationError": "$context.integrationErrorMessage",
	} {
		require.Equal(t, variable, fields[name], "field %s", name)
	}
}

// An alarm sees intake's 500s, which its function's Errors metric does not:
// the handler answers every failure, so the invocation succeeds. It counts
// the API's 5xx, those of the function and those API Gateway answers
// itself (a throttled or failed invocation): 5 or more in a minute.
func TestTemplateAnAlarmSeesTheApisServerErrors(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	var found []string
	for _, name := range tpl.OfType("AWS::CloudWatch::Alarm") {
		p := tpl.Resources[name].Properties
		if p["Namespace"] != "AWS/ApiGateway" {
			continue
		}
		found = append(found, name)
		require.Equal(t, "5xx", p["MetricName"], "%s: an HTTP API's metric is 5xx (a REST API's is 5XXError)", name)
		require.Equal(t, []any{map[string]any{"Name": "ApiId", "Value": ref("JobsApi")}}, p["Dimensions"], name)
		require.Equal(t, "Sum", p["Statistic"], name)
		require.Equal(t, 60, asInt(t, p["Period"]), name)
		require.Equal(t, 1, asInt(t, p["EvaluationPeriods"]), name)
		require.Equal(t, 5, asInt(t, p["Threshold"]), name)
		require.Equal(t, "GreaterThanOrEqualToThreshold", p["ComparisonOperator"], "%s: 5 is enough", name)
		require.Equal(t, "notBreaching", p["TreatMissingData"], "%s: no data is no request, so no error", name)
	}
	require.Len(t, found, 1, "one alarm on the API's server errors")
}

// The events queue has its age alarm, as the commands queue has: a
// throttled or failing projector lets views and totals fall behind
// silently otherwise.
func TestTemplateAnAlarmSeesTheEventsQueuesAge(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	ages := map[string]int{}
	for _, name := range tpl.OfType("AWS::CloudWatch::Alarm") {
		p := tpl.Resources[name].Properties
		if p["MetricName"] != "ApproximateAgeOfOldestMessage" {
			continue
		}
		require.Equal(t, "AWS/SQS", p["Namespace"], name)
		require.Equal(t, "Maximum", p["Statistic"], name)
		require.Equal(t, "GreaterThanThreshold", p["ComparisonOperator"], name)
		for _, d := range p["Dimensions"].([]any) {
			ages[getAttTarget(asMap(d)["Value"])] = asInt(t, p["Threshold"])
		}
	}
	require.Contains(t, ages, "CommandsQueue")
	require.Contains(t, ages, "EventsQueue", "no alarm on the events queue's oldest message")
	// An event waiting on a gap is received again every visibility timeout
	// until the projector recovers at its RecoverAfterReceives-th receive:
	// a wait by design, which the alarm must not take for a lag.
	wait := (toInt(tpl.Parameters["RecoverAfterReceives"].MaxValue) - 1) * asInt(t, tpl.Resources["EventsQueue"].Properties["VisibilityTimeout"])
	require.Greater(t, ages["EventsQueue"], wait, "above the longest wait for a gap's recovery")
	require.LessOrEqual(t, ages["EventsQueue"], 900, "views and totals no later than commands")
}
