package capacity

import (
	"fmt"
	"strconv"

	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Setting is one of the template's settings the model uses, and where it
// was read.
type Setting struct {
	Value  float64
	Source string // e.g. `parameter WorkerMaxConcurrency's default`
	// Parameter is the template parameter that sets it ("" for a
	// literal or a constant), and Range its MinValue and MaxValue
	// ("2 to 1000"; "" without them): what a limit's "raise" names.
	Parameter, Range string
}

// Settings are the template's settings the limits depend on.
type Settings struct {
	WorkerConcurrency    Setting // the commands mapping's MaximumConcurrency
	WorkerBatch          Setting // the commands mapping's BatchSize: lanes per invocation
	WorkerStorageMB      Setting // the worker's ephemeral storage
	MaxCandidateBytes    Setting
	ProjectorConcurrency Setting // the events mapping's MaximumConcurrency
	ProjectorBatch       Setting // the events mapping's BatchSize
	LiveShards           Setting // the live index's partition-key values
	// TotalsShards are the shards of each tenant's totals: partition-key
	// values tenant#k, each holding its total item and the cursors of the
	// jobs hashed to it (1, one item per tenant, without the parameter).
	TotalsShards Setting
	// Each function's MemorySize in MB: its own, else Globals'.
	IntakeMemoryMB, WorkerMemoryMB, ProjectorMemoryMB, RelayMemoryMB Setting
}

// List returns the settings by name, in a fixed order, for a report.
func (s Settings) List() []struct {
	Name string
	Setting
} {
	type named = struct {
		Name string
		Setting
	}
	return []named{
		{"worker MaximumConcurrency", s.WorkerConcurrency}, {"worker BatchSize", s.WorkerBatch},
		{"worker ephemeral storage (MB)", s.WorkerStorageMB}, {"MaxCandidateBytes", s.MaxCandidateBytes},
		{"projector MaximumConcurrency", s.ProjectorConcurrency}, {"projector BatchSize", s.ProjectorBatch},
		{"live index shards", s.LiveShards}, {"totals shards per tenant", s.TotalsShards},
		{"intake MemorySize (MB)", s.IntakeMemoryMB}, {"worker MemorySize (MB)", s.WorkerMemoryMB},
		{"projector MemorySize (MB)", s.ProjectorMemoryMB}, {"relay MemorySize (MB)", s.RelayMemoryMB},
	}
}

// liveShardsParameter is the parameter that sets the live index's shards
// once the template has it (issue 19, point 2); until then the code's
// constant jobs.LiveShards is the count.
const liveShardsParameter = "LiveShards"

// TotalsShardsParameter is the parameter that sets each tenant's totals
// shards (issue 19, point 1; TOTALS_SHARDS in the functions'
// environment); a template without it has one total item per tenant.
const TotalsShardsParameter = "TotalsShards"

// SettingsFrom reads the settings from a template: each mapping's
// MaximumConcurrency and BatchSize (a literal, or the default of the
// parameter it refers to), the worker's storage, MaxCandidateBytes' default,
// the LiveShards parameter's default or, without one, jobs.LiveShards, and
// the TotalsShards parameter's default or, without one, 1.
func SettingsFrom(tpl *samtemplate.Template) (Settings, error) {
	var s Settings
	var err error
	read := func(dst *Setting, where string, path ...string) {
		if err == nil {
			*dst, err = settingAt(tpl, where, path...)
		}
	}
	commands := []string{"WorkerFunction", "Events", "Commands", "Properties"}
	events := []string{"ProjectorFunction", "Events", "Events", "Properties"}
	read(&s.WorkerConcurrency, "WorkerFunction's Commands event", append(commands, "ScalingConfig", "MaximumConcurrency")...)
	read(&s.WorkerBatch, "WorkerFunction's Commands event", append(commands, "BatchSize")...)
	read(&s.WorkerStorageMB, "WorkerFunction's EphemeralStorage", "WorkerFunction", "EphemeralStorage", "Size")
	read(&s.ProjectorConcurrency, "ProjectorFunction's Events event", append(events, "ScalingConfig", "MaximumConcurrency")...)
	read(&s.ProjectorBatch, "ProjectorFunction's Events event", append(events, "BatchSize")...)
	if err == nil {
		s.MaxCandidateBytes, err = parameterDefault(tpl, "MaxCandidateBytes")
	}
	for _, m := range []struct {
		dst      *Setting
		function string
	}{{&s.IntakeMemoryMB, "IntakeFunction"}, {&s.WorkerMemoryMB, "WorkerFunction"}, {&s.ProjectorMemoryMB, "ProjectorFunction"}, {&s.RelayMemoryMB, "RelayFunction"}} {
		if err == nil {
			*m.dst, err = memorySize(tpl, m.function)
		}
	}
	if err != nil {
		return Settings{}, err
	}
	s.LiveShards, err = parameterOr(tpl, liveShardsParameter,
		Setting{Value: jobs.LiveShards, Source: "the code's constant jobs.LiveShards (no LiveShards parameter in the template)"})
	if err != nil {
		return Settings{}, err
	}
	s.TotalsShards, err = parameterOr(tpl, TotalsShardsParameter,
		Setting{Value: 1, Source: "one total item per tenant (no TotalsShards parameter in the template)"})
	if err != nil {
		return Settings{}, err
	}
	return s, nil
}

// parameterOr is the parameter's default, or otherwise when the template
// has no such parameter.
func parameterOr(tpl *samtemplate.Template, name string, otherwise Setting) (Setting, error) {
	if _, ok := tpl.Parameters[name]; !ok {
		return otherwise, nil
	}
	return parameterDefault(tpl, name)
}

// settingAt reads the value at path (a resource, then keys into its
// Properties): a number, or a Ref to a parameter, whose default it takes.
func settingAt(tpl *samtemplate.Template, where string, path ...string) (Setting, error) {
	res, ok := tpl.Resources[path[0]]
	if !ok {
		return Setting{}, fmt.Errorf("%w: template: no resource %s", ErrInvalid, path[0])
	}
	var v any = res.Properties
	for _, key := range path[1:] {
		m, ok := v.(map[string]any)
		if !ok {
			return Setting{}, fmt.Errorf("%w: template: %s: no %v", ErrInvalid, where, path)
		}
		v = m[key]
	}
	if ref, ok := v.(map[string]any); ok {
		name, ok := ref["Ref"].(string)
		if !ok || len(ref) != 1 {
			return Setting{}, fmt.Errorf("%w: template: %s: %v is neither a number nor a Ref to a parameter", ErrInvalid, where, v)
		}
		return parameterDefault(tpl, name)
	}
	n, err := number(v)
	if err != nil {
		return Setting{}, fmt.Errorf("%w: template: %s: %v: %w", ErrInvalid, where, path[len(path)-1], err)
	}
	return Setting{Value: n, Source: where + " (a literal in the template)"}, nil
}

// memorySize is function's MemorySize: its own, else the Globals'
// Function section's (SAM's rule), which must then be a literal.
func memorySize(tpl *samtemplate.Template, function string) (Setting, error) {
	res, ok := tpl.Resources[function]
	if !ok {
		return Setting{}, fmt.Errorf("%w: template: no resource %s", ErrInvalid, function)
	}
	if _, ok := res.Properties["MemorySize"]; ok {
		return settingAt(tpl, function+"'s MemorySize", function, "MemorySize")
	}
	globals, _ := tpl.Globals["Function"].(map[string]any)
	v, ok := globals["MemorySize"]
	if !ok {
		return Setting{}, fmt.Errorf("%w: template: %s has no MemorySize, nor has Globals' Function", ErrInvalid, function)
	}
	n, err := number(v)
	if err != nil {
		return Setting{}, fmt.Errorf("%w: template: Globals' Function MemorySize: %w", ErrInvalid, err)
	}
	return Setting{Value: n, Source: "Globals' Function MemorySize"}, nil
}

// parameterDefault is a Number parameter's default.
func parameterDefault(tpl *samtemplate.Template, name string) (Setting, error) {
	p, ok := tpl.Parameters[name]
	if !ok {
		return Setting{}, fmt.Errorf("%w: template: no parameter %s", ErrInvalid, name)
	}
	n, err := number(p.Default)
	if err != nil {
		return Setting{}, fmt.Errorf("%w: template: parameter %s's default: %w", ErrInvalid, name, err)
	}
	out := Setting{Value: n, Source: "parameter " + name + "'s default", Parameter: name}
	lo, okLo := samtemplate.ScalarText(p.MinValue)
	hi, okHi := samtemplate.ScalarText(p.MaxValue)
	if okLo && okHi {
		out.Range = lo + " to " + hi
	}
	return out, nil
}

func number(v any) (float64, error) {
	text, ok := samtemplate.ScalarText(v)
	if !ok {
		return 0, fmt.Errorf("%v is not a number", v)
	}
	n, err := strconv.ParseFloat(text, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive number", text)
	}
	return n, nil
}
