package samtemplate_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// template-postgres.yaml copies what it shares with template.yaml (SAM has
// no include: see its top), as template-kafka.yaml does
// (kafka_shared_template_test.go): every parameter, condition, mapping,
// resource, output and Globals entry of the same name is the same in both,
// but for those postgresVariant.changes names, each with why; what only
// template.yaml has is DynamoDB's arbiter (postgresVariant.baseOnly). So
// template.yaml's checks of a shared entry (the queues, their policy and
// visibility, the receive budget, the articles table, the bucket, the API,
// the alarms on them, ...) hold for template-postgres.yaml too, and a
// change to template.yaml fails here until it is made in
// template-postgres.yaml (or listed below); what the PostgreSQL template
// changes or adds is checked by postgresProblems
// (postgres_checks_test.go).

// variant is a template that copies another (its base, template.yaml
// unless named) but for what it names.
type variant struct {
	file string
	// base is the file the variant copies; "" for template.yaml.
	base string
	// changes are the entries the variant has in another form, with why.
	changes map[string]string
	// baseOnly are the base's entries the variant has no use for.
	baseOnly []string
}

func (v variant) baseFile() string {
	if v.base == "" {
		return "template.yaml"
	}
	return v.base
}

var postgresVariant = variant{
	file: "template-postgres.yaml",
	changes: map[string]string{
		"Globals.Function":                   "every function in the VPC, with where the database is (the proxy) and no secret in its environment, instead of JOBS_TABLE",
		"Resources.DataKey":                  "RDS and Secrets Manager may use it too: the cluster's storage and its master user's secret",
		"Resources.IntakeFunction":           "after the schema; RELAY_FUNCTION_NAME, which it nudges after a commit",
		"Resources.IntakeRole":               "the database through the proxy instead of the Jobs table; the relay's nudge; the VPC's network interfaces",
		"Resources.RelayFunction":            "no stream mapping: nudged by the writers, and RelaySchedule every minute; a reserved concurrency; after the schema",
		"Resources.RelayRole":                "the outbox in the database instead of the stream, and no on-failure queue; the VPC's network interfaces",
		"Resources.WorkerFunction":           "after the schema; the quarantine in the database; RELAY_FUNCTION_NAME",
		"Resources.WorkerRole":               "the jobs and the quarantine in the database instead of their tables; the relay's nudge; the VPC's network interfaces",
		"Resources.ProjectorFunction":        "after the schema; the views, totals and quarantine in the database",
		"Resources.ProjectorRole":            "the views, totals, jobs and quarantine in the database instead of their tables; the VPC's network interfaces",
		"Resources.SweeperFunction":          "after the schema; the views, totals and quarantine in the database; RELAY_FUNCTION_NAME",
		"Resources.SweeperRole":              "the jobs, views, totals and quarantine in the database instead of their tables and indexes; the relay's nudge; the VPC's network interfaces",
		"Resources.OperatorDashboard":        "the relay's oldest outbox row instead of a stream's iterator age; no totals conflicts (a row lock waits, nothing is retried)",
		"Parameters.WorkerMaxConcurrency":    "20, not 200: every invocation holds its pool's connections, which the database's max_connections (through RDS Proxy) bounds; the capacity goal is template.yaml's",
		"Parameters.ProjectorMaxConcurrency": "10, not 100, for the same reason",
	},
	baseOnly: []string{
		"Parameters.LiveShards", "Parameters.TotalsShards", "Resources.JobsTable", "Resources.ViewsTable", "Resources.TotalsTable", "Resources.QuarantineTable",
		"Resources.StreamFailureQueue", "Resources.StreamFailureAlarm", "Resources.RelayIteratorAgeAlarm",
		"Outputs.JobsTableName", "Outputs.JobsTableStreamArn", "Outputs.ViewsTableName", "Outputs.TotalsTableName",
		"Outputs.QuarantineTableName", "Outputs.StreamFailureQueueUrl",
	},
}

// drift says where tpl departs from base other than as v says: an entry of
// base missing, kept though listed as base's only, changed though not
// listed, or listed as changed though the same; and a listed name base does
// not have.
func (v variant) drift(base, tpl *samtemplate.Template) []string {
	return v.driftFrom(templateEntries(base), tpl)
}

// driftFrom is drift from the base's entries ours (all of them, or those
// the variant copies from this base).
func (v variant) driftFrom(ours map[string]any, tpl *samtemplate.Template) []string {
	theirs := templateEntries(tpl)
	base := v.baseFile()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(ours)) {
		mine, has := theirs[name]
		why, listed := v.changes[name]
		only := slices.Contains(v.baseOnly, name)
		same := has && reflect.DeepEqual(ours[name], mine)
		switch {
		case only && has:
			out = append(out, fmt.Sprintf("%s is listed as %s's only, but %s has it", name, base, v.file))
		case only:
		case !has:
			out = append(out, fmt.Sprintf("%s is missing from %s", name, v.file))
		case listed && same:
			out = append(out, fmt.Sprintf("%s is listed as changed (%s), but is the same in both", name, why))
		case !listed && !same:
			out = append(out, fmt.Sprintf("%s differs from %s's: mirror the change in %s, or list it as changed with why", name, base, v.file))
		}
	}
	for _, name := range slices.Concat(slices.Sorted(maps.Keys(v.changes)), v.baseOnly) {
		if _, ok := ours[name]; !ok {
			out = append(out, fmt.Sprintf("%s is listed, but %s has none", name, base))
		}
	}
	return out
}

func TestPostgresTemplateSharesTemplateYAMLsEntries(t *testing.T) {
	t.Parallel()
	require.Empty(t, postgresVariant.drift(loadRepoTemplate(t), loadPostgresTemplate(t)))
	for name := range templateEntries(loadPostgresTemplate(t)) {
		if _, ok := templateEntries(loadRepoTemplate(t))[name]; !ok {
			t.Log("PostgreSQL's own:", name)
		}
	}
}

// Each way the copies can drift is caught.
func TestPostgresSharedEntriesCatchEachDrift(t *testing.T) {
	t.Parallel()
	drift := func(tpl *samtemplate.Template) []string { return postgresVariant.drift(loadRepoTemplate(t), tpl) }
	requireEachBreakNamed(t, postgresTemplatePath, drift, []breakCase{
		{"a shared table changed", "  ArticlesTable:\n    Type: AWS::DynamoDB::Table\n    DeletionPolicy: Retain", "  ArticlesTable:\n    Type: AWS::DynamoDB::Table\n    DeletionPolicy: Delete",
			"Resources.ArticlesTable differs from template.yaml's"},
		{"a shared queue changed", "maxReceiveCount: 8 #", "maxReceiveCount: 9 #", "Resources.CommandsQueue differs from template.yaml's"},
		{"a shared resource dropped", "  IntakeErrorsAlarm:\n", "  IntakeErrorsAlarmm:\n", "Resources.IntakeErrorsAlarm is missing from template-postgres.yaml"},
		{"a shared parameter changed", "    Default: tenant\n", "    Default: custom:tenant\n", "Parameters.TenantClaim differs"},
		{"a shared mapping changed", `"60": { CommandsVisibility: 360 }`, `"60": { CommandsVisibility: 300 }`, "Mappings.WorkerTimeouts differs"},
		{"a shared condition changed", "  SignCode: !Not [!Equals [!Ref SigningProfileVersionArn, \"\"]]", "  SignCode: !Equals [!Ref SigningProfileVersionArn, \"\"]",
			"Conditions.SignCode differs"},
		{"a shared output dropped", "  CandidatesBucketName:\n", "  BucketName:\n", "Outputs.CandidatesBucketName is missing"},
		{"a changed entry the same again", `                  - !Sub "rds.${AWS::Region}.amazonaws.com"
                  - !Sub "secretsmanager.${AWS::Region}.amazonaws.com"
`, "", "Resources.DataKey is listed as changed (RDS and Secrets Manager may use it too"},
		{"a DynamoDB table kept", "  ArticlesTable:\n", "  JobsTable:\n    Type: AWS::DynamoDB::Table\n  ArticlesTable:\n",
			"Resources.JobsTable is listed as template.yaml's only, but template-postgres.yaml has it"},
	})
	// A name listed that template.yaml does not have is a stale list.
	stale := postgresVariant
	stale.baseOnly = append(slices.Clone(stale.baseOnly), "Resources.NoSuchTable")
	require.Contains(t, stale.drift(loadRepoTemplate(t), loadPostgresTemplate(t)), "Resources.NoSuchTable is listed, but template.yaml has none")
}
