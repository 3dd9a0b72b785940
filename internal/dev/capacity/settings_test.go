package capacity_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/capacity"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

func loadTemplate(t *testing.T) *samtemplate.Template {
	t.Helper()
	tpl, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	return tpl
}

// projectorScaling is the projector's events mapping's ScalingConfig.
func projectorScaling(tpl *samtemplate.Template) map[string]any {
	events := tpl.Resources["ProjectorFunction"].Properties["Events"].(map[string]any)
	return events["Events"].(map[string]any)["Properties"].(map[string]any)["ScalingConfig"].(map[string]any)
}

// A setting is a literal or a Ref to a parameter, whose default is taken;
// without a LiveShards parameter the code's constant is the count, and the
// source says so.
func TestSettingsFromTheTemplate(t *testing.T) {
	tpl := loadTemplate(t)
	tpl.Parameters["ProjectorMaxConcurrency"] = samtemplate.Parameter{Type: "Number", Default: 30}
	projectorScaling(tpl)["MaximumConcurrency"] = map[string]any{"Ref": "ProjectorMaxConcurrency"}
	tpl.Parameters["LiveShards"] = samtemplate.Parameter{Type: "Number", Default: "64"}
	tpl.Parameters["TotalsShards"] = samtemplate.Parameter{Type: "Number", Default: 8, MinValue: 1, MaxValue: "256"}
	tpl.Parameters["WorkerMaxConcurrency"] = samtemplate.Parameter{Type: "Number", Default: 20, MinValue: 2, MaxValue: 1000}
	s, err := capacity.SettingsFrom(tpl)
	require.NoError(t, err)
	require.Equal(t, capacity.Setting{Value: 30, Source: "parameter ProjectorMaxConcurrency's default", Parameter: "ProjectorMaxConcurrency"}, s.ProjectorConcurrency,
		"no bounds, no range")
	require.Equal(t, capacity.Setting{Value: 64, Source: "parameter LiveShards's default", Parameter: "LiveShards"}, s.LiveShards)
	require.Equal(t, capacity.Setting{Value: 8, Source: "parameter TotalsShards's default", Parameter: "TotalsShards", Range: "1 to 256"}, s.TotalsShards)
	require.Equal(t, 10.0, s.ProjectorBatch.Value)
	require.Equal(t, 10.0, s.WorkerBatch.Value)
	require.Equal(t, capacity.Setting{Value: 20, Source: "parameter WorkerMaxConcurrency's default", Parameter: "WorkerMaxConcurrency", Range: "2 to 1000"}, s.WorkerConcurrency)

	projectorScaling(tpl)["MaximumConcurrency"] = 10
	delete(tpl.Parameters, "LiveShards")
	delete(tpl.Parameters, "TotalsShards")
	s, err = capacity.SettingsFrom(tpl)
	require.NoError(t, err)
	require.Equal(t, capacity.Setting{Value: 10, Source: "ProjectorFunction's Events event (a literal in the template)"}, s.ProjectorConcurrency)
	require.Equal(t, float64(jobs.LiveShards), s.LiveShards.Value)
	require.Contains(t, s.LiveShards.Source, "jobs.LiveShards (no LiveShards parameter in the template)")
	require.Equal(t, capacity.Setting{Value: 1, Source: "one total item per tenant (no TotalsShards parameter in the template)"}, s.TotalsShards)
}

// A setting the model cannot read is an error that says where.
func TestSettingsTheModelCannotRead(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*samtemplate.Template)
		want   string
	}{
		"no projector": {func(tpl *samtemplate.Template) { delete(tpl.Resources, "ProjectorFunction") }, "no resource ProjectorFunction"},
		"a Sub": {func(tpl *samtemplate.Template) {
			projectorScaling(tpl)["MaximumConcurrency"] = map[string]any{"Fn::Sub": "10"}
		}, "neither a number nor a Ref"},
		"zero":         {func(tpl *samtemplate.Template) { projectorScaling(tpl)["MaximumConcurrency"] = 0 }, `"0" is not a positive number`},
		"no parameter": {func(tpl *samtemplate.Template) { delete(tpl.Parameters, "WorkerMaxConcurrency") }, "no parameter WorkerMaxConcurrency"},
		"a bad default": {func(tpl *samtemplate.Template) {
			tpl.Parameters["MaxCandidateBytes"] = samtemplate.Parameter{Type: "Number", Default: "lots"}
		}, "parameter MaxCandidateBytes's default"},
		"a bad TotalsShards": {func(tpl *samtemplate.Template) {
			tpl.Parameters["TotalsShards"] = samtemplate.Parameter{Type: "Number", Default: 0}
		}, `parameter TotalsShards's default: "0" is not a positive number`},
	} {
		t.Run(name, func(t *testing.T) {
			tpl := loadTemplate(t)
			tc.change(tpl)
			_, err := capacity.SettingsFrom(tpl)
			require.ErrorIs(t, err, capacity.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The worker's lanes are its batch while its spool holds as many
// candidates: at the default storage, 10; at 512 MB, three of 128 MiB
// (512 × 900,000 / 134,217,728 = 3.4), which the worker's limit follows.
func TestTheWorkersLanesFollowItsSpool(t *testing.T) {
	s := pinned(t)
	s.WorkerStorageMB.Value = 512
	p, err := capacity.Compute(committed(t), s, capacity.Input{Groups: 1000, Tenants: 1, Region: "us-east-1"})
	require.NoError(t, err)
	require.Equal(t, 327.0, byKey(p)["worker-concurrency"].JobsPerS, "20 × 3 lanes / 183 ms")
	s.MaxCandidateBytes.Value = 1e12
	_, err = capacity.Compute(committed(t), s, capacity.Input{Groups: 1000, Tenants: 1, Region: "us-east-1"})
	require.ErrorIs(t, err, capacity.ErrInvalid)
	require.ErrorContains(t, err, "spools no candidate")
}
