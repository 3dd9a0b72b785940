package startup

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEnvReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	e := NewEnvFrom(map[string]string{"JOBS_TABLE": "jobs", "BATCH": "11", "GRACE": "soon"})
	require.Equal(t, "jobs", e.String("JOBS_TABLE"))
	require.Empty(t, e.String("CANDIDATES_BUCKET"))
	require.Equal(t, 10, e.Int("BATCH", 10, 1, 10))
	require.Equal(t, time.Hour, e.Duration("GRACE", time.Hour, time.Minute, 24*time.Hour))
	require.Equal(t, "eu", e.StringOr("REGION", "eu"))
	err := e.Err()
	require.ErrorContains(t, err, "CANDIDATES_BUCKET is not set")
	require.ErrorContains(t, err, `BATCH="11" is not an integer in [1, 10]`)
	require.ErrorContains(t, err, `GRACE="soon" is not a duration`)
}

func TestEnvOfAGoodConfigurationHasNoError(t *testing.T) {
	t.Parallel()
	e := NewEnvFrom(map[string]string{"A": "x", "N": "3", "D": "2m"})
	require.Equal(t, "x", e.String("A"))
	require.Equal(t, 3, e.Int("N", 1, 1, 5))
	require.Equal(t, 2*time.Minute, e.Duration("D", time.Minute, time.Second, time.Hour))
	require.NoError(t, e.Err())
}

// Refuse names the variables whose fields the error names, each once and
// in order, and every variable when it names none of their fields.
func TestRefuseNamesTheVariablesOfTheFieldsNamed(t *testing.T) {
	t.Parallel()
	errBad := errors.New("pkg: invalid configuration")
	fields := Fields{"Tables.Views": "VIEWS_TABLE", "Tables.Totals": "TOTALS_TABLE", "MaxSize": "MAX_SIZE"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: Tables.Totals is empty", errBad), "TOTALS_TABLE: pkg"},
		{fmt.Errorf("%w: MaxSize 0 is below Tables.Views", errBad), "MAX_SIZE or VIEWS_TABLE: pkg"},
		{fmt.Errorf("%w: MaxSizes is not a field", errBad), "MAX_SIZE or TOTALS_TABLE or VIEWS_TABLE: pkg"},
		{fmt.Errorf("%w: Client is nil", errBad), "MAX_SIZE or TOTALS_TABLE or VIEWS_TABLE: pkg"},
	} {
		env := NewEnvFrom(nil)
		env.Refuse(tc.err, fields)
		require.ErrorIs(t, env.Err(), errBad)
		require.ErrorContains(t, env.Err(), "lambdawire: misconfigured function: "+tc.want, tc.err.Error())
	}
}
