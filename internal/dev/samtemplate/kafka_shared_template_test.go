package samtemplate_test

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// template-kafka.yaml copies what it shares with template.yaml (SAM has no
// include: see its top), so every parameter, condition, mapping, resource,
// output and Globals entry of the same name is the same in both, but for
// those kafkaChanges names, each with why; what only template.yaml has is
// its SQS transport (sqsOnly). So template.yaml's checks of a shared
// entry (its tables, the bucket, intake, the sweeper's role, the alarms
// on them, ...) hold for template-kafka.yaml too, and a change to
// template.yaml fails here until it is made in template-kafka.yaml (or
// listed below); what the Kafka template changes or adds is checked by
// kafkaProblems.
//
// Of template.yaml's checks, those on SQS alone (visibility, FIFO queues,
// the queues' policy and size cap, the receive budget, the DLQ alarms)
// have no Kafka counterpart; those on a changed entry have theirs in
// kafka_checks_test.go: functions and build (functions), least privilege,
// tracing and log groups (leastPrivilege, functions), code signing
// (functions), event sources (mappings), quarantine scopes and thresholds
// (quarantine, kafkaRetryProblem), held alarms (alarms), the worker's
// spool (its parameters are shared, its BatchSize 10 in mappings).

// kafkaChanges are the entries template-kafka.yaml has in another form.
var kafkaChanges = map[string]string{
	"Parameters.WorkerTimeout":    "Lambda runs a Kafka invocation for 14 minutes at most; no queue visibility to look up",
	"Parameters.MaxGenerations":   "its bound is the attempts' threshold, not a queue's maxReceiveCount",
	"Globals.Function":            "TRANSPORT: kafka, which a bootstrap built without the kafka tag refuses",
	"Resources.RelayFunction":     "produces to the topics, from the cluster's VPC",
	"Resources.RelayRole":         "MSK IAM or the SCRAM secret, and VPC network interfaces, instead of the queues",
	"Resources.WorkerFunction":    "its mapping is a resource; the commands topic and the attempts' threshold",
	"Resources.WorkerRole":        "its mapping's permissions; the quarantine scoped by topic",
	"Resources.ProjectorFunction": "its mapping is a resource; the events topic and the attempts' thresholds",
	"Resources.ProjectorRole":     "its mapping's permissions; the quarantine scoped by topic",
	"Resources.SweeperFunction":   "counts the topics' held keys",
	"Resources.CommandsHeldAlarm": "the held keys of the commands topic",
	"Resources.EventsHeldAlarm":   "the held keys of the events topic",
	"Resources.OperatorDashboard": "held keys per topic, the records the mappings gave up and the worker's consumer lag where template.yaml has queues",
}

// sqsOnly are template.yaml's entries the Kafka template has no use for.
var sqsOnly = []string{
	"Parameters.OperatorRoleArn", "Parameters.RecoverAfterReceives", "Parameters.CommandsQuarantineAfterReceives",
	"Parameters.EventsQuarantineAfterReceives", "Parameters.WorkerMaxConcurrency", "Parameters.ProjectorMaxConcurrency", "Mappings.WorkerTimeouts",
	"Resources.CommandsQueue", "Resources.CommandsDLQ", "Resources.EventsQueue", "Resources.EventsDLQ",
	"Resources.QueuesSendPolicy", "Resources.CommandsDLQAlarm", "Resources.EventsDLQAlarm",
	"Resources.OldestCommandAlarm", "Resources.OldestEventAlarm",
	"Outputs.CommandsQueueUrl", "Outputs.CommandsDLQUrl", "Outputs.EventsQueueUrl", "Outputs.EventsDLQUrl",
}

// templateEntries flattens a template's named entries, by section.
func templateEntries(tpl *samtemplate.Template) map[string]any {
	out := map[string]any{}
	for name, p := range tpl.Parameters {
		out["Parameters."+name] = p
	}
	for name, r := range tpl.Resources {
		out["Resources."+name] = r
	}
	for section, m := range map[string]map[string]any{"Conditions": tpl.Conditions, "Mappings": tpl.Mappings,
		"Outputs": tpl.Outputs, "Globals": tpl.Globals, "Rules": tpl.Rules} {
		for name, v := range m {
			out[section+"."+name] = v
		}
	}
	return out
}

// sharedProblems says where kafka departs from sqs other than as
// kafkaChanges and sqsOnly say.
func sharedProblems(sqs, kafka *samtemplate.Template) []string {
	a, b := templateEntries(sqs), templateEntries(kafka)
	var out []string
	for name, v := range a {
		w, shared := b[name]
		_, changed := kafkaChanges[name]
		switch {
		case !shared && !slices.Contains(sqsOnly, name):
			out = append(out, name+" is missing from template-kafka.yaml")
		case shared && slices.Contains(sqsOnly, name):
			out = append(out, name+" is listed as SQS's only, but template-kafka.yaml has it")
		case shared && !changed && !reflect.DeepEqual(v, w):
			out = append(out, name+" differs from template.yaml's: mirror the change in template-kafka.yaml, or list it in kafkaChanges with why")
		case shared && changed && reflect.DeepEqual(v, w):
			out = append(out, name+" is listed in kafkaChanges, but is the same in both")
		}
	}
	for name := range kafkaChanges {
		if _, ok := a[name]; !ok {
			out = append(out, name+" is listed in kafkaChanges, but template.yaml has none")
		}
	}
	slices.Sort(out)
	return out
}

func TestKafkaTemplateSharesTemplateYAMLsEntries(t *testing.T) {
	t.Parallel()
	require.Empty(t, sharedProblems(loadRepoTemplate(t), loadKafkaTemplate(t)))
	for name := range templateEntries(loadKafkaTemplate(t)) {
		if _, ok := templateEntries(loadRepoTemplate(t))[name]; !ok {
			t.Log("Kafka's own:", name)
		}
	}
}

// Each way the copies can drift is caught.
func TestKafkaSharedEntriesCatchEachDrift(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(kafkaTemplatePath)
	require.NoError(t, err)
	src := string(raw)
	for _, c := range []struct{ name, old, new, want string }{
		{"a shared table changed", "  ViewsTable:\n    Type: AWS::DynamoDB::Table\n    DeletionPolicy: Retain", "  ViewsTable:\n    Type: AWS::DynamoDB::Table\n    DeletionPolicy: Delete",
			"Resources.ViewsTable differs from template.yaml's"},
		{"a shared resource dropped", "  IntakeErrorsAlarm:\n", "  IntakeErrorsAlarmm:\n", "Resources.IntakeErrorsAlarm is missing from template-kafka.yaml"},
		{"a shared parameter changed", "    Default: tenant\n", "    Default: custom:tenant\n", "Parameters.TenantClaim differs"},
		{"a shared condition changed", "  SignCode: !Not [!Equals [!Ref SigningProfileVersionArn, \"\"]]", "  SignCode: !Equals [!Ref SigningProfileVersionArn, \"\"]",
			"Conditions.SignCode differs"},
		{"a changed entry the same again", "      Dimensions: [{ Name: Queue, Value: !Ref EventsTopicName }]", "      Dimensions: [{ Name: Queue, Value: !GetAtt EventsQueue.QueueName }]",
			"Resources.EventsHeldAlarm is listed in kafkaChanges, but is the same in both"},
		{"an SQS queue kept", "  StreamFailureQueue:\n", "  CommandsQueue:\n    Type: AWS::SQS::Queue\n  StreamFailureQueue:\n",
			"Resources.CommandsQueue is listed as SQS's only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, 1, strings.Count(src, c.old), "the case's text must occur once")
			broken, err := samtemplate.Parse([]byte(strings.Replace(src, c.old, c.new, 1)))
			require.NoError(t, err)
			problems := sharedProblems(loadRepoTemplate(t), broken)
			require.Contains(t, fmt.Sprint(problems), c.want)
		})
	}
}
