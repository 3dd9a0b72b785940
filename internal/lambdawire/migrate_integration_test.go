//go:build integration

package lambdawire

import (
	"testing"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// A Create applies the three components' migrations to an empty database
// and answers SUCCESS; an Update applies nothing new and answers SUCCESS
// under the id it was given; the stores' tables are there.
func TestMigrateAppliesTheThreeComponentsOnCreateAndUpdate(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	rs := newResponseServer(t)
	h := migrateOn(t, db)
	_, err := h(t.Context(), schemaEvent(cfn.RequestCreate, rs.URL, ""))
	require.NoError(t, err)
	got, _ := rs.last(t)
	require.Equal(t, cfn.StatusSuccess, got.Status, got.Reason)
	require.Equal(t, SchemaResourceID, got.PhysicalResourceID)

	components := func() map[string]int {
		rows, err := db.QueryContext(t.Context(), `SELECT component, max(version) FROM fifoworker_schema GROUP BY component`)
		require.NoError(t, err)
		defer func() { _ = rows.Close() }()
		m := map[string]int{}
		for rows.Next() {
			var c string
			var v int
			require.NoError(t, rows.Scan(&c, &v))
			m[c] = v
		}
		require.NoError(t, rows.Err())
		return m
	}
	applied := components()
	require.ElementsMatch(t, []string{"jobs", "projection", "quarantine"}, keys(applied))
	for c, v := range applied {
		require.GreaterOrEqual(t, v, 2, c)
	}
	for _, table := range []string{"jobs", "job_outbox", "quarantine_holds"} {
		var n int
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM `+table).Scan(&n), table)
	}

	_, err = h(t.Context(), schemaEvent(cfn.RequestUpdate, rs.URL, "fifoworker-schema"))
	require.NoError(t, err)
	got, _ = rs.last(t)
	require.Equal(t, cfn.StatusSuccess, got.Status, got.Reason)
	require.Equal(t, "fifoworker-schema", got.PhysicalResourceID)
	require.Equal(t, applied, components())
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
