package samtemplate_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The state a stack holds outlives the stack: `sam delete`, or an update
// that replaces a table (a new key schema or LSI), keeps every table and
// the bucket (DeletionPolicy and UpdateReplacePolicy Retain), and a table
// cannot be deleted by hand or by another stack while
// TableDeletionProtection is "true", its default.
func TestTemplateTablesAndTheBucketOutliveTheStack(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	tables := tpl.OfType("AWS::DynamoDB::Table")
	require.Len(t, tables, 5, "Jobs, Articles, Views, Totals, Quarantine")
	kept := append(append([]string{}, tables...), tpl.OfType("AWS::S3::Bucket")...)
	require.Len(t, kept, 6)
	for _, name := range kept {
		a := tpl.Resources[name].Attributes
		require.Equal(t, "Retain", a["DeletionPolicy"], "%s: deleting the stack keeps it", name)
		require.Equal(t, "Retain", a["UpdateReplacePolicy"], "%s: an update that replaces it keeps the old one", name)
	}

	p := tpl.Parameters["TableDeletionProtection"]
	require.Equal(t, "true", p.Default, "on unless the deployment says otherwise")
	require.ElementsMatch(t, []any{"true", "false"}, p.AllowedValues)
	off := map[string]string{"TableDeletionProtection": "false"}
	for _, name := range tables {
		v := tpl.Resources[name].Properties["DeletionProtectionEnabled"]
		require.Equal(t, ref("TableDeletionProtection"), chosen(t, tpl, nil, v), name)
		require.Equal(t, ref("TableDeletionProtection"), chosen(t, tpl, off, v), "%s: the parameter, whatever its value", name)
	}
}

// The queues are deleted with the stack, on purpose, and say so: their
// names are fixed (<stack>-commands.fifo, ...), so a retained queue would
// make the next deployment of the stack fail on a name that exists, and
// what they carry is recoverable from the retained tables.
func TestTemplateQueuesAreDeletedWithTheStackOnPurpose(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	queues := tpl.OfType("AWS::SQS::Queue")
	require.NotEmpty(t, queues)
	for _, name := range queues {
		r := tpl.Resources[name]
		require.Contains(t, r.Properties, "QueueName", "%s: a fixed name", name)
		require.Equal(t, "Delete", r.Attributes["DeletionPolicy"], "%s: a choice, written down", name)
		require.Equal(t, "Delete", r.Attributes["UpdateReplacePolicy"], "%s: a choice, written down", name)
	}
}

// Every table can be restored to any second of the last 35 days: Totals
// cannot be recomputed once the jobs they sum have expired, and views,
// articles, jobs and parked messages are no cheaper to lose.
func TestTemplateEveryTableHasPointInTimeRecovery(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	for _, name := range tpl.OfType("AWS::DynamoDB::Table") {
		require.Equal(t, map[string]any{"PointInTimeRecoveryEnabled": true},
			tpl.Resources[name].Properties["PointInTimeRecoverySpecification"], name)
	}
}
