package samtemplate_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// The five functions of the pipeline, as template.yaml declares them.
var functions = map[string]string{
	"IntakeFunction":    "functions/intake/",
	"RelayFunction":     "functions/relay/",
	"WorkerFunction":    "functions/worker/",
	"ProjectorFunction": "functions/projector/",
	"SweeperFunction":   "functions/sweeper/",
}

func fnProp(tpl *samtemplate.Template, fn, key string) any {
	if v, ok := tpl.Resources[fn].Properties[key]; ok {
		return v
	}
	g, _ := tpl.Globals["Function"].(map[string]any)
	return g[key]
}

func TestTemplateFunctionsAreBuiltAsSAMBuildsGoForGraviton(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	require.ElementsMatch(t, slices.Collect(maps.Keys(functions)), tpl.OfType("AWS::Serverless::Function"))
	for fn, dir := range functions {
		r := tpl.Resources[fn]
		require.Equal(t, "provided.al2023", fnProp(tpl, fn, "Runtime"), fn)
		require.Equal(t, []any{"arm64"}, fnProp(tpl, fn, "Architectures"), fn)
		require.Equal(t, "bootstrap", fnProp(tpl, fn, "Handler"), fn)
		require.Equal(t, "go1.x", r.Metadata["BuildMethod"], "%s: sam build uses its Go builder", fn)
		require.Equal(t, dir, r.Properties["CodeUri"], fn)
		require.FileExists(t, filepath.Join("../../..", dir, "main.go"), "%s: CodeUri holds a main package", fn)
	}
}

// That every setting a function requires is declared in its environment is
// checked where the builders are: internal/lambdawire's
// TestEveryFunctionBuildsFromTheTemplatesEnvironment builds each function
// from the template's environment.

func TestTemplateEventSourcesPreserveOrderAndReportPartialFailures(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	kinds := map[string]int{}
	for fn := range functions {
		for name, ev := range asMap(tpl.Resources[fn].Properties["Events"]) {
			e := asMap(ev)
			p := asMap(e["Properties"])
			typ, _ := e["Type"].(string)
			kinds[typ]++
			switch typ {
			case "SQS":
				require.Equal(t, []any{"ReportBatchItemFailures"}, p["FunctionResponseTypes"], "%s.%s", fn, name)
				require.LessOrEqual(t, asInt(t, p["BatchSize"]), 10, "%s.%s: FIFO batches hold at most 10", fn, name)
				require.NotNil(t, asMap(p["ScalingConfig"])["MaximumConcurrency"], "%s.%s: bounded concurrency", fn, name)
				require.NotContains(t, p, "MaximumBatchingWindowInSeconds", "%s.%s: FIFO sources have no batching window", fn, name)
			case "DynamoDB":
				require.Equal(t, []any{"ReportBatchItemFailures"}, p["FunctionResponseTypes"], "%s.%s", fn, name)
				require.Equal(t, true, p["BisectBatchOnFunctionError"], "%s.%s", fn, name)
				require.Equal(t, 1, asInt(t, p["ParallelizationFactor"]), "%s.%s: one batch per shard keeps per-job order simple", fn, name)
				require.Positive(t, asInt(t, p["MaximumRetryAttempts"]), "%s.%s: a bounded retry, then the on-failure queue", fn, name)
				dest := asMap(asMap(p["DestinationConfig"])["OnFailure"])
				require.Equal(t, "StreamFailureQueue", getAttTarget(dest["Destination"]), "%s.%s", fn, name)
			case "Schedule":
				require.NotEmpty(t, p["Schedule"], "%s.%s", fn, name)
			case "HttpApi":
				require.Equal(t, "JobsApi", asMap(p["ApiId"])["Ref"], "%s.%s: routes live on the authorised API", fn, name)
			default:
				t.Fatalf("%s.%s: unexpected event source %q", fn, name, typ)
			}
		}
	}
	require.Equal(t, map[string]int{"SQS": 2, "DynamoDB": 1, "Schedule": 1, "HttpApi": 3}, kinds)

	auth := asMap(tpl.Resources["JobsApi"].Properties["Auth"])
	require.Equal(t, "JwtAuth", auth["DefaultAuthorizer"], "every route needs a caller identity")
	jwt := asMap(asMap(asMap(auth["Authorizers"])["JwtAuth"])["JwtConfiguration"])
	require.Equal(t, "JwtIssuer", asMap(jwt["issuer"])["Ref"])
}

// Each function has a role of its own that grants only actions on this
// template's resources (no "*" resources but the X-Ray grant, no wildcard
// actions), and a log group of its own with a retention.
func TestTemplateFunctionsHaveLeastPrivilegeAndBoundedLogs(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	roles := map[string]bool{}
	for fn := range functions {
		p := tpl.Resources[fn].Properties
		role := getAttTarget(p["Role"])
		require.NotEmpty(t, role, "%s: an explicit role (SAM's event policies would add managed policies on *)", fn)
		require.False(t, roles[role], "%s: roles are not shared", fn)
		roles[role] = true
		require.Equal(t, "AWS::IAM::Role", tpl.Resources[role].Type)
		require.NotContains(t, p, "Policies", fn)

		logGroup := asMap(asMap(p["LoggingConfig"])["LogGroup"])["Ref"]
		require.NotNil(t, logGroup, "%s: its own log group", fn)
		require.NotNil(t, tpl.Resources[logGroup.(string)].Properties["RetentionInDays"], "%s: log retention", fn)

		for _, pol := range tpl.Resources[role].Properties["Policies"].([]any) {
			for _, st := range asMap(asMap(pol)["PolicyDocument"])["Statement"].([]any) {
				s := asMap(st)
				require.Equal(t, "Allow", s["Effect"])
				if isXRayStatement(s) {
					continue // X-Ray takes no resource (tracing_template_test.go)
				}
				for _, a := range asList(s["Action"]) {
					require.NotContains(t, a, "*", "%s: action %v", role, a)
				}
				for _, r := range asList(s["Resource"]) {
					require.NotEqual(t, "*", r, "%s: a * resource", role)
					require.True(t, refersToTemplate(r, tpl), "%s: resource %v is not one of this template's", role, r)
				}
			}
		}
	}
}

func TestTemplateAlarmsWatchWhatCanGoWrong(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	watched := map[string]bool{}
	for _, name := range tpl.OfType("AWS::CloudWatch::Alarm") {
		p := tpl.Resources[name].Properties
		for _, d := range p["Dimensions"].([]any) {
			dm := asMap(d)
			target := getAttTarget(dm["Value"])
			if target == "" {
				target, _ = asMap(dm["Value"])["Ref"].(string)
			}
			watched[p["MetricName"].(string)+" "+target] = true
		}
	}
	for _, want := range []string{
		"ApproximateNumberOfMessagesVisible CommandsDLQ", "ApproximateNumberOfMessagesVisible EventsDLQ",
		"ApproximateNumberOfMessagesVisible StreamFailureQueue", "ApproximateAgeOfOldestMessage CommandsQueue",
		"IteratorAge RelayFunction",
	} {
		require.True(t, watched[want], "no alarm on %s", want)
	}
	for fn := range functions {
		require.True(t, watched["Errors "+fn], "no errors alarm on %s", fn)
	}
}

// The projector recovers a gap from the Jobs item before SQS gives up on
// the event.
func TestTemplateProjectorRecoversBeforeTheEventsDLQ(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	recoverAt := asInt(t, tpl.Parameters["RecoverAfterReceives"].Default)
	rp := asMap(tpl.Resources["EventsQueue"].Properties["RedrivePolicy"])
	require.Less(t, recoverAt, asInt(t, rp["maxReceiveCount"]))
}

func TestTemplateOutputsWhatAUserNeeds(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	for _, want := range []string{"ApiUrl", "JobsTableName", "CommandsQueueUrl", "EventsQueueUrl", "CandidatesBucketName",
		"CommandsDLQUrl", "EventsDLQUrl", "ViewsTableName", "TotalsTableName", "ArticlesTableName"} {
		require.Contains(t, tpl.Outputs, want)
	}
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// refersToTemplate reports whether an IAM resource is built from one of the
// template's own resources.
func refersToTemplate(r any, tpl *samtemplate.Template) bool {
	if name := getAttTarget(r); name != "" {
		_, ok := tpl.Resources[name]
		return ok
	}
	if sub, ok := asMap(r)["Fn::Sub"].(string); ok {
		name, _, _ := strings.Cut(strings.TrimPrefix(sub, "${"), ".")
		name, _, _ = strings.Cut(name, "}")
		_, ok := tpl.Resources[name]
		return strings.HasPrefix(sub, "${") && ok
	}
	return false
}
