package pgcode_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgcode"
)

type coded string

func (c coded) Error() string    { return "server error " + string(c) }
func (c coded) SQLState() string { return string(c) }

func TestClassesOfWrappedServerErrors(t *testing.T) {
	for code, want := range map[string][2]bool{
		"40001": {true, false}, "40P01": {true, false}, "23505": {false, true},
		"40002": {false, false}, "23503": {false, false}, "": {false, false},
	} {
		err := fmt.Errorf("jobs: claim: %w", coded(code))
		got, ok := pgcode.Of(err)
		require.True(t, ok, code)
		require.Equal(t, code, got)
		require.Equal(t, want[0], pgcode.LostRace(err), "LostRace(%q)", code)
		require.Equal(t, want[1], pgcode.UniqueViolation(err), "UniqueViolation(%q)", code)
	}
	_, ok := pgcode.Of(errors.New("connection reset"))
	require.False(t, ok)
	require.False(t, pgcode.LostRace(nil))
}
