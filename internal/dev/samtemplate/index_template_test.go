package samtemplate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The Jobs table's two sparse indexes are the ones pkg/jobs queries, with
// the keys its items carry: "live" (live_shard S, updated_at N) lists live
// jobs for the sweeper's nudges, "finished" (finished_shard S,
// finished_key S) final jobs for its repair of their projections. Both
// project the keys only, which is all a listing returns.
func TestTemplateJobsTableHasTheLiveAndFinishedIndexes(t *testing.T) {
	t.Parallel()
	p := loadRepoTemplate(t).Resources["JobsTable"].Properties
	types := map[string]string{}
	for _, d := range p["AttributeDefinitions"].([]any) {
		m := asMap(d)
		types[m["AttributeName"].(string)] = m["AttributeType"].(string)
	}
	type key struct{ name, typ, kind string }
	indexes := map[string][]key{}
	for _, g := range asList(p["GlobalSecondaryIndexes"]) {
		m := asMap(g)
		require.Equal(t, "KEYS_ONLY", asMap(m["Projection"])["ProjectionType"], m["IndexName"])
		var keys []key
		for _, k := range m["KeySchema"].([]any) {
			km := asMap(k)
			name := km["AttributeName"].(string)
			keys = append(keys, key{name, types[name], km["KeyType"].(string)})
		}
		indexes[m["IndexName"].(string)] = keys
	}
	require.Equal(t, map[string][]key{
		jobs.LiveIndex:     {{"live_shard", "S", "HASH"}, {"updated_at", "N", "RANGE"}},
		jobs.FinishedIndex: {{"finished_shard", "S", "HASH"}, {"finished_key", "S", "RANGE"}},
	}, indexes)
	// CloudFormation refuses an attribute definition that no key uses.
	used := map[string]bool{"job_id": true}
	for _, keys := range indexes {
		for _, k := range keys {
			used[k.name] = true
		}
	}
	for name := range types {
		require.True(t, used[name], "attribute definition %s is no key", name)
	}
}

// The sweeper repairs final jobs' projections: it is given the projector's
// tables and the delay, may query the finished index, and may read and
// write (through the recovery's transaction) the views and the totals.
func TestTemplateSweeperMayRepairProjections(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	vars := asMap(asMap(tpl.Resources["SweeperFunction"].Properties["Environment"])["Variables"])
	require.Equal(t, "ViewsTable", asMap(vars["VIEWS_TABLE"])["Ref"])
	require.Equal(t, "TotalsTable", asMap(vars["TOTALS_TABLE"])["Ref"])
	require.NotEmpty(t, vars["SWEEP_REPAIR_AFTER"])

	allowed := map[string]map[string]bool{} // resource → actions
	role := getAttTarget(tpl.Resources["SweeperFunction"].Properties["Role"])
	for _, pol := range tpl.Resources[role].Properties["Policies"].([]any) {
		for _, st := range asMap(asMap(pol)["PolicyDocument"])["Statement"].([]any) {
			s := asMap(st)
			for _, r := range asList(s["Resource"]) {
				name := getAttTarget(r)
				if sub, ok := asMap(r)["Fn::Sub"].(string); ok {
					name = sub
				}
				if allowed[name] == nil {
					allowed[name] = map[string]bool{}
				}
				for _, a := range asList(s["Action"]) {
					allowed[name][a.(string)] = true
				}
			}
		}
	}
	require.True(t, allowed["${JobsTable.Arn}/index/"+jobs.FinishedIndex]["dynamodb:Query"], "query the finished index")
	require.True(t, allowed["${JobsTable.Arn}/index/"+jobs.LiveIndex]["dynamodb:Query"], "query the live index")
	for _, table := range []string{"ViewsTable", "TotalsTable"} {
		for _, a := range []string{"dynamodb:GetItem", "dynamodb:UpdateItem"} {
			require.True(t, allowed[table][a], "%s on %s", a, table)
		}
	}
}
