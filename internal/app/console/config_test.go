package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

func TestNewRefusesEachInvalidConfig(t *testing.T) {
	t.Parallel()
	store, err := jobs.NewMemoryStore(jobs.Config{})
	require.NoError(t, err)
	valid := func() console.Config {
		return console.Config{Jobs: store, Token: strings.Repeat("x", console.MinTokenLength), Addr: "127.0.0.1:8090"}
	}
	_, err = console.New(valid())
	require.NoError(t, err, "a token of exactly MinTokenLength")
	for _, c := range []struct {
		field  string
		change func(*console.Config)
	}{
		{"Jobs", func(c *console.Config) { c.Jobs = nil }},
		{"Token", func(c *console.Config) { c.Token = "" }},
		{"Token", func(c *console.Config) { c.Token = strings.Repeat("x", console.MinTokenLength-1) }},
		{"Addr", func(c *console.Config) { c.Addr = "" }},
		{"Addr", func(c *console.Config) { c.Addr = "127.0.0.1" }},
		{"Addr", func(c *console.Config) { c.Addr = "127.0.0.1:0" }},
		{"Addr", func(c *console.Config) { c.Addr = "127.0.0.1:65536" }},
		{"Addr", func(c *console.Config) { c.Addr = "127.0.0.1:http" }},
		{"ResultLinkTTL", func(c *console.Config) { c.ResultLinkTTL = -1 }},
		{"ResultLinkTTL", func(c *console.Config) { c.ResultLinkTTL = console.MaxResultLinkTTL + 1 }},
		{"RedriveTimeout", func(c *console.Config) { c.RedriveTimeout = -1 }},
		{"RedriveTimeout", func(c *console.Config) { c.RedriveTimeout = console.MaxRedriveTimeout + 1 }},
		{"SourceTimeout", func(c *console.Config) { c.SourceTimeout = -1 }},
		{"SourceTimeout", func(c *console.Config) { c.SourceTimeout = time.Minute + 1 }},
		{"LiveCountLimit", func(c *console.Config) { c.LiveCountLimit = -1 }},
		{"LiveCountLimit", func(c *console.Config) { c.LiveCountLimit = jobs.MaxListLimit + 1 }},
		{"Queues[0].Name", func(c *console.Config) { c.Queues = []console.Queue{{Name: ""}} }},
		{"Queues[0].Name", func(c *console.Config) { c.Queues = []console.Queue{{Name: "a/b"}} }},
		{"Queues[0].Name", func(c *console.Config) { c.Queues = []console.Queue{{Name: strings.Repeat("q", 81)}} }},
		{"Queues[1].Name", func(c *console.Config) { c.Queues = []console.Queue{{Name: "commands"}, {Name: "commands"}} }},
	} {
		cfg := valid()
		c.change(&cfg)
		_, err := console.New(cfg)
		require.ErrorIs(t, err, console.ErrInvalidConfig, c.field)
		require.ErrorContains(t, err, c.field)
	}
	for _, ok := range []func(*console.Config){
		func(c *console.Config) { c.ResultLinkTTL = console.MaxResultLinkTTL },
		func(c *console.Config) { c.RedriveTimeout = console.MaxRedriveTimeout },
		func(c *console.Config) { c.SourceTimeout = time.Minute },
		func(c *console.Config) { c.LiveCountLimit = 1 },
		func(c *console.Config) { c.LiveCountLimit = jobs.MaxListLimit },
		func(c *console.Config) { c.Addr = "[::1]:65535" },
		func(c *console.Config) { c.Addr = ":1" },
		func(c *console.Config) { c.Queues = []console.Queue{{Name: strings.Repeat("q", 80)}} },
	} {
		cfg := valid()
		ok(&cfg)
		_, err := console.New(cfg)
		require.NoError(t, err)
	}
}
