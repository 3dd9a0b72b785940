package samtemplate_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Lambda's bounds on an SQS event source's ScalingConfig.MaximumConcurrency
// (AWS Lambda API reference, ScalingConfig: "Valid Range: Minimum value of
// 2. Maximum value of 1000.").
const (
	minMaximumConcurrency = 2
	maxMaximumConcurrency = 1000
)

// requireBounded checks that the parameter deploys at exactly lo and hi
// and is refused one past either, as CloudFormation refuses a Number
// outside its MinValue and MaxValue, and that its default is def.
func requireBounded(t *testing.T, tpl *samtemplate.Template, name string, lo, hi, def int) {
	t.Helper()
	p, ok := tpl.Parameters[name]
	require.True(t, ok, "%s is a parameter", name)
	require.Equal(t, "Number", p.Type, name)
	require.Equal(t, lo, toInt(p.MinValue), "%s: MinValue", name)
	require.Equal(t, hi, toInt(p.MaxValue), "%s: MaxValue", name)
	require.Equal(t, def, toInt(p.Default), "%s: Default", name)
	for v, ok := range map[int]bool{lo - 1: false, lo: true, hi: true, hi + 1: false} {
		err := localdeploy.CheckParameter(p, strconv.Itoa(v))
		if ok {
			require.NoError(t, err, "%s=%d", name, v)
		} else {
			require.Error(t, err, "%s=%d", name, v)
		}
	}
}

// The live index's shard count is a parameter bounded by the code's own
// bounds (the store refuses what the template would pass otherwise), and
// every function of a template with the Jobs table on DynamoDB is given it
// as LIVE_SHARDS.
func TestTemplateLiveShardsIsTheStoresBoundedSetting(t *testing.T) {
	t.Parallel()
	for file, tpl := range map[string]*samtemplate.Template{"template.yaml": loadRepoTemplate(t), "template-kafka.yaml": loadKafkaTemplate(t)} {
		requireBounded(t, tpl, "LiveShards", jobs.MinLiveShards, jobs.MaxLiveShards, templateLiveShards)
		vars := asMap(asMap(asMap(tpl.Globals["Function"])["Environment"])["Variables"])
		require.Equal(t, ref("LiveShards"), vars["LIVE_SHARDS"], "%s: every function's LIVE_SHARDS", file)
	}
}

// The Totals table's shard count is a parameter bounded by the store's own
// bounds, given to every function of a template with the projection on
// DynamoDB as TOTALS_SHARDS, its default the store's.
func TestTemplateTotalsShardsIsTheStoresBoundedSetting(t *testing.T) {
	t.Parallel()
	for file, tpl := range map[string]*samtemplate.Template{"template.yaml": loadRepoTemplate(t), "template-kafka.yaml": loadKafkaTemplate(t)} {
		requireBounded(t, tpl, "TotalsShards", 1, projection.MaxShards, projection.DefaultShards)
		vars := asMap(asMap(asMap(tpl.Globals["Function"])["Environment"])["Variables"])
		require.Equal(t, ref("TotalsShards"), vars["TOTALS_SHARDS"], "%s: every function's TOTALS_SHARDS", file)
	}
}

// templateLiveShards is the templates' default for the live index's
// shards: above the library's (jobs.LiveShards, 16), so that the index
// carries more than the Jobs table's on-demand maximum (the capacity
// model's goal, TestTheGoalOnPaper in internal/dev/capacity).
const templateLiveShards = 32

// The projector's concurrency is a parameter as the worker's is, with
// Lambda's bounds, and its SQS mapping takes it.
func TestTemplateProjectorConcurrencyIsABoundedParameter(t *testing.T) {
	t.Parallel()
	for file, tpl := range map[string]*samtemplate.Template{"template.yaml": loadRepoTemplate(t), "template-postgres.yaml": loadPostgresTemplate(t)} {
		projector, worker := 100, 200 // sized for the capacity goal (internal/dev/capacity, TestTheGoalOnPaper)
		if file == "template-postgres.yaml" {
			projector, worker = 10, 20 // each invocation holds its pool's connections (postgresVariant)
		}
		requireBounded(t, tpl, "ProjectorMaxConcurrency", minMaximumConcurrency, maxMaximumConcurrency, projector)
		requireBounded(t, tpl, "WorkerMaxConcurrency", minMaximumConcurrency, maxMaximumConcurrency, worker)
		for fn, param := range map[string]string{"ProjectorFunction": "ProjectorMaxConcurrency", "WorkerFunction": "WorkerMaxConcurrency"} {
			evts := asMap(tpl.Resources[fn].Properties["Events"])
			require.NotEmpty(t, evts, "%s: %s", file, fn)
			for name, e := range evts {
				scaling := asMap(asMap(asMap(e)["Properties"])["ScalingConfig"])
				require.Equal(t, ref(param), scaling["MaximumConcurrency"], "%s: %s.%s", file, fn, name)
			}
		}
	}
}
