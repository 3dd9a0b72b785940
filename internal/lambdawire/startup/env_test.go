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

// Int's and Duration's bounds are inclusive: each bound is taken, one
// step beyond it is a problem naming the setting, and the default is
// returned then.
func TestEnvBoundsAreInclusive(t *testing.T) {
	t.Parallel()
	for v, ok := range map[string]bool{"0": false, "1": true, "10": true, "11": false} {
		e := NewEnvFrom(map[string]string{"BATCH": v})
		want := 5
		if ok {
			want = map[string]int{"1": 1, "10": 10}[v]
		}
		require.Equal(t, want, e.Int("BATCH", 5, 1, 10), v)
		require.Equal(t, !ok, e.Err() != nil, v)
	}
	for v, ok := range map[string]bool{"999ms": false, "1s": true, "1h": true, "1h0m0.001s": false} {
		e := NewEnvFrom(map[string]string{"GRACE": v})
		got := e.Duration("GRACE", time.Minute, time.Second, time.Hour)
		if ok {
			d, err := time.ParseDuration(v)
			require.NoError(t, err)
			require.Equal(t, d, got, v)
			require.NoError(t, e.Err(), v)
		} else {
			require.Equal(t, time.Minute, got, v)
			require.ErrorContains(t, e.Err(), `GRACE="`+v+`" is not a duration in [1s, 1h0m0s]`, v)
		}
	}
}

// A setting set to "" is not set: a required one is a problem, an
// optional one its default, without a problem.
func TestAnEmptySettingIsNotSet(t *testing.T) {
	t.Parallel()
	e := NewEnvFrom(map[string]string{"A": "", "B": "", "N": "", "D": ""})
	require.Equal(t, "def", e.StringOr("B", "def"))
	require.Equal(t, 7, e.Int("N", 7, 1, 10))
	require.Equal(t, time.Minute, e.Duration("D", time.Minute, time.Second, time.Hour))
	require.NoError(t, e.Err())
	require.Empty(t, e.String("A"))
	require.EqualError(t, e.Err(), "lambdawire: misconfigured function: A is not set")
}

// A variable behind two fields the error names is named once; a field
// is named only as a word of its own, and an underscore or a digit is
// part of a word.
func TestRefuseNamesEachVariableOnceAndOnlyWholeFields(t *testing.T) {
	t.Parallel()
	errBad := errors.New("pkg: invalid configuration")
	env := NewEnvFrom(nil)
	env.Refuse(fmt.Errorf("%w: Username and Password are empty", errBad), Fields{"Username": "SECRET_ARN", "Password": "SECRET_ARN", "Brokers": "BROKERS"})
	require.EqualError(t, env.Err(), "lambdawire: misconfigured function: SECRET_ARN: pkg: invalid configuration: Username and Password are empty")

	for msg, named := range map[string]bool{
		"Size is 0": true, "size: Size": true, "Limits.Size is 0": true, "(Size)": true,
		"Max_Size is 0": false, "Size_max is 0": false, "Size2 is 0": false, "MaxSize is 0": false, "Sizes is 0": false,
	} {
		require.Equal(t, named, namesField(msg, "Size"), msg)
	}
}
