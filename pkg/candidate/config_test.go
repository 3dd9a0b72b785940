package candidate_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// New refuses each Config that cannot work with an error wrapping
// ErrInvalidConfig that names the field (and a bound's value), and
// accepts each bound at exactly its value.
func TestNewRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	mem := memoryS3(t)
	valid := func(c candidate.Config) candidate.Config {
		c.Client, c.Bucket = mem, testBucket
		return c
	}
	refused := map[string]struct {
		cfg  candidate.Config
		text string
	}{
		"nil client":              {candidate.Config{Bucket: testBucket}, "Client is nil"},
		"empty bucket":            {candidate.Config{Client: mem}, "Bucket is empty"},
		"spool dir and spool":     {valid(candidate.Config{SpoolDir: t.TempDir(), Spool: newDisk(t, 100)}), "SpoolDir"},
		"negative max size":       {valid(candidate.Config{MaxSize: -1}), "MaxSize -1 is outside"},
		"max size past PutObject": {valid(candidate.Config{MaxSize: candidate.MaxSize + 1}), "MaxSize 5368709121 is outside"},
		"negative attempts":       {valid(candidate.Config{ConflictAttempts: -1}), "ConflictAttempts -1 is negative"},
		"negative backoff":        {valid(candidate.Config{ConflictBackoff: -time.Nanosecond}), "ConflictBackoff -1ns is negative"},
		"negative budget":         {valid(candidate.Config{SpoolBudget: -1}), "SpoolBudget: candidate: spool budget -1 is not positive"},
		"budget below max size":   {valid(candidate.Config{MaxSize: 100, SpoolBudget: 99}), "SpoolBudget: candidate: max size 100 is above the spool budget 99"},
		"budget below default":    {valid(candidate.Config{SpoolBudget: candidate.MaxSize - 1}), "SpoolBudget: candidate: max size 5368709120 is above"},
		"budget checked with the other settings valid": {
			valid(candidate.Config{ConflictAttempts: 3, ConflictBackoff: time.Millisecond, MaxSize: 100, SpoolBudget: 99}), "SpoolBudget",
		},
		"attempts checked with a budget": {
			valid(candidate.Config{MaxSize: 100, SpoolBudget: 100, ConflictAttempts: -1}), "ConflictAttempts -1 is negative",
		},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := candidate.New(tc.cfg)
			require.ErrorIs(t, err, candidate.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.text)
			require.Nil(t, s)
			require.Equal(t, err, tc.cfg.Validate(), "New says what Validate says")
		})
	}
	_, err := candidate.New(valid(candidate.Config{MaxSize: 100, SpoolBudget: 99}))
	require.ErrorIs(t, err, candidate.ErrBudgetTooSmall, "the budget's own error is kept")

	accepted := map[string]candidate.Config{
		"defaults":                {},
		"least max size":          {MaxSize: 1},
		"max size of a PutObject": {MaxSize: candidate.MaxSize},
		"one attempt":             {ConflictAttempts: 1},
		"least backoff":           {ConflictBackoff: time.Nanosecond},
		"budget of the max size":  {MaxSize: 100, SpoolBudget: 100},
		"budget of the default":   {SpoolBudget: candidate.MaxSize},
		"spool dir":               {SpoolDir: t.TempDir()},
		"spool":                   {Spool: newDisk(t, 100)},
	}
	for name, cfg := range accepted {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg = valid(cfg)
			require.NoError(t, cfg.Validate())
			s, err := candidate.New(cfg)
			require.NoError(t, err)
			require.NotNil(t, s)
		})
	}
}

// The defaults are today's: 5 attempts, 50 ms before the first retry, and
// candidates up to a single PutObject's 5 GiB. A zero ConflictAttempts and
// ConflictBackoff are those defaults.
func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, 5, candidate.DefaultConflictAttempts)
	require.Equal(t, 50*time.Millisecond, candidate.DefaultConflictBackoff)
	require.Equal(t, int64(5<<30), candidate.MaxSize)
	synctest.Test(t, func(t *testing.T) {
		bucket := newBucket(t)
		s, err := candidate.New(candidate.Config{Client: bucket, Bucket: testBucket, SpoolDir: t.TempDir()})
		require.NoError(t, err)
		conflict := apiError("ConditionalRequestConflict")
		bucket.FailNextPuts(conflict, conflict, conflict, conflict, conflict, conflict)
		_, err = s.Put(context.Background(), mustKey(t, "job-42", 1, "a", "txt"), strings.NewReader("content"))
		require.ErrorContains(t, err, "still conflicting after 5 attempts")
		times := bucket.CallTimes(s3mem.OpPutObject)
		require.Len(t, times, candidate.DefaultConflictAttempts)
		wait := times[1].Sub(times[0])
		require.GreaterOrEqual(t, wait, candidate.DefaultConflictBackoff/2)
		require.LessOrEqual(t, wait, candidate.DefaultConflictBackoff)
	})
}
