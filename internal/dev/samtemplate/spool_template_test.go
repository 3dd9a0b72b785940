package samtemplate_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The worker's ephemeral storage is a parameter within Lambda's bounds
// (512 to 10,240 MB), given to the function both as its EphemeralStorage
// and, since Lambda does not tell a function its size, in its environment
// (EPHEMERAL_STORAGE_MB), from which the worker derives its spool budget.
// MaxCandidateBytes, the permanent bound of a candidate, is a parameter
// of 1 byte to a single PutObject's 5 GiB, in the environment too
// (MAX_CANDIDATE_BYTES); that ten of it, a lane for each message of a
// batch, fit the budget is checked at cold start (internal/lambdawire),
// since CloudFormation cannot compute it. The defaults are checked against
// that same cold-start check in internal/lambdawire's
// TestTemplateSpoolDefaultsSpoolEveryLaneOfABatch.
func TestTemplateWorkerSpoolFollowsItsParameters(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	for name, want := range map[string][3]int{
		"WorkerEphemeralStorage": {1536, 512, 10240},
		"MaxCandidateBytes":      {128 << 20, 1, 5 << 30},
	} {
		p, ok := tpl.Parameters[name]
		require.True(t, ok, name)
		require.Equal(t, "Number", p.Type, name)
		require.Equal(t, want, [3]int{toInt(p.Default), toInt(p.MinValue), toInt(p.MaxValue)}, "%s: default, min, max", name)
	}
	worker := tpl.Resources["WorkerFunction"].Properties
	require.Equal(t, map[string]any{"Size": ref("WorkerEphemeralStorage")}, worker["EphemeralStorage"])
	vars := asMap(asMap(worker["Environment"])["Variables"])
	require.Equal(t, ref("WorkerEphemeralStorage"), vars["EPHEMERAL_STORAGE_MB"])
	require.Equal(t, ref("MaxCandidateBytes"), vars["MAX_CANDIDATE_BYTES"])
	for _, fn := range []string{"IntakeFunction", "RelayFunction", "ProjectorFunction", "SweeperFunction"} {
		require.Nil(t, fnProp(tpl, fn, "EphemeralStorage"), "%s writes nothing to /tmp: Lambda's default", fn)
	}
}
