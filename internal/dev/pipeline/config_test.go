package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// Build refuses each Config it cannot run with ErrInvalidConfig, the field
// named, before it builds anything (Config{} was a nil pointer's panic).
func TestBuildRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	valid := Config{Template: tpl, Deployed: &localdeploy.Result{}, StackName: "fw", Region: "eu-west-1"}
	bootstraps := map[string]string{}
	for _, fn := range Functions {
		bootstraps[fn] = "/bin/" + fn
	}
	underRIE := valid
	underRIE.Mode, underRIE.RIE, underRIE.Bootstraps, underRIE.LogDir = UnderRIE, "/bin/rie", bootstraps, t.TempDir()
	withoutWorker := map[string]string{}
	for fn, b := range bootstraps {
		if fn != "worker" {
			withoutWorker[fn] = b
		}
	}
	for name, tc := range map[string]struct {
		base  Config
		edit  func(*Config)
		field string
	}{
		"no template":       {valid, func(c *Config) { c.Template = nil }, "Template"},
		"no deployment":     {valid, func(c *Config) { c.Deployed = nil }, "Deployed"},
		"no stack name":     {valid, func(c *Config) { c.StackName = "" }, "StackName"},
		"no region":         {valid, func(c *Config) { c.Region = "" }, "Region"},
		"unknown mode":      {valid, func(c *Config) { c.Mode = UnderRIE + 1 }, "Mode 2 is"},
		"negative mode":     {valid, func(c *Config) { c.Mode = InProcess - 1 }, "Mode -1 is"},
		"RIE without RIE":   {underRIE, func(c *Config) { c.RIE = "" }, "RIE"},
		"RIE without logs":  {underRIE, func(c *Config) { c.LogDir = "" }, "LogDir"},
		"RIE without one":   {underRIE, func(c *Config) { c.Bootstraps = withoutWorker }, `Bootstraps["worker"]`},
		"RIE with an empty": {underRIE, func(c *Config) { c.Bootstraps = map[string]string{"worker": ""} }, `Bootstraps["intake"]`},
	} {
		c := tc.base
		tc.edit(&c)
		require.ErrorIs(t, c.Validate(), ErrInvalidConfig, name)
		p, err := Build(t.Context(), c)
		require.ErrorIs(t, err, ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
		require.Nil(t, p, name)
	}
	var p *Pipeline
	require.NotPanics(t, func() { p, err = Build(t.Context(), Config{}) })
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.Nil(t, p)
	require.NoError(t, valid.Validate())
	require.NoError(t, underRIE.Validate())
}

// NewHTTPAPI refuses an API with no function or no identity behind it (a
// nil identity was a panic); the logger is optional.
func TestNewHTTPAPIRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	now := issuedAt
	id := newTestIdentity(t, &now)
	fn := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{}, nil
	}
	for field, cfg := range map[string]HTTPAPIConfig{
		"Handler":  {Identity: id},
		"Identity": {Handler: fn},
	} {
		var api *HTTPAPI
		var err error
		require.NotPanics(t, func() { api, err = NewHTTPAPI(cfg) }, field)
		require.ErrorIs(t, err, ErrInvalidConfig, field)
		require.ErrorContains(t, err, field)
		require.Nil(t, api, field)
	}
	api, err := NewHTTPAPI(HTTPAPIConfig{Handler: fn, Identity: id})
	require.NoError(t, err)
	require.NotNil(t, api)
}

// StartRIE refuses each RIEConfig it cannot run, before it starts
// anything; the timeout's bounds are Lambda's, each valid itself.
func TestStartRIERefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	valid := RIEConfig{Name: "worker", RIE: "/bin/rie", Bootstrap: "/bin/worker", LogDir: t.TempDir(), Timeout: time.Minute}
	for name, tc := range map[string]struct {
		edit  func(*RIEConfig)
		field string
	}{
		"no name":            {func(c *RIEConfig) { c.Name = "" }, "Name"},
		"no emulator":        {func(c *RIEConfig) { c.RIE = "" }, "RIE"},
		"no bootstrap":       {func(c *RIEConfig) { c.Bootstrap = "" }, "Bootstrap"},
		"no log dir":         {func(c *RIEConfig) { c.LogDir = "" }, "LogDir"},
		"no timeout":         {func(c *RIEConfig) { c.Timeout = 0 }, "Timeout"},
		"under a second":     {func(c *RIEConfig) { c.Timeout = time.Second - 1 }, "Timeout"},
		"over 15 minutes":    {func(c *RIEConfig) { c.Timeout = 15*time.Minute + time.Second }, "Timeout"},
		"a fraction of a 1s": {func(c *RIEConfig) { c.Timeout = 1500 * time.Millisecond }, "Timeout"},
	} {
		c := valid
		tc.edit(&c)
		p, err := StartRIE(t.Context(), c)
		require.ErrorIs(t, err, ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
		require.Nil(t, p, name)
	}
	for _, d := range []time.Duration{time.Second, 15 * time.Minute} {
		c := valid
		c.Timeout = d
		require.NoError(t, c.Validate(), d)
	}
}
