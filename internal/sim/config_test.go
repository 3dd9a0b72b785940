package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/sim"
)

// NewQueue refuses each invalid QueueConfig with ErrInvalidConfig, the
// field named; each bound is a valid setting itself.
func TestNewQueueRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	valid := sim.QueueConfig{Name: "commands.fifo", Visibility: time.Minute, MaxReceive: 5}
	for name, tc := range map[string]struct {
		edit  func(*sim.QueueConfig)
		field string
	}{
		"no name":             {func(c *sim.QueueConfig) { c.Name = "" }, "Name"},
		"not FIFO":            {func(c *sim.QueueConfig) { c.Name = "commands" }, "Name"},
		"only the suffix":     {func(c *sim.QueueConfig) { c.Name = ".fifo" }, "Name"},
		"no visibility":       {func(c *sim.QueueConfig) { c.Visibility = 0 }, "Visibility"},
		"negative visibility": {func(c *sim.QueueConfig) { c.Visibility = -time.Nanosecond }, "Visibility"},
		"no max receive":      {func(c *sim.QueueConfig) { c.MaxReceive = 0 }, "MaxReceive"},
		"negative receives":   {func(c *sim.QueueConfig) { c.MaxReceive = -1 }, "MaxReceive"},
	} {
		c := valid
		tc.edit(&c)
		q, err := sim.NewQueue(c)
		require.ErrorIs(t, err, sim.ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
		require.Nil(t, q, name)
	}
	for name, edit := range map[string]func(*sim.QueueConfig){
		"least visibility": func(c *sim.QueueConfig) { c.Visibility = time.Nanosecond },
		"one receive":      func(c *sim.QueueConfig) { c.MaxReceive = 1 },
		"the least name":   func(c *sim.QueueConfig) { c.Name = "q.fifo" },
	} {
		c := valid
		edit(&c)
		q, err := sim.NewQueue(c)
		require.NoError(t, err, name)
		require.NotNil(t, q, name)
	}
}

// A world the simulation cannot build is Run's error, never a panic: an
// unknown Break here.
func TestRunRefusesAWorldItCannotBuild(t *testing.T) {
	t.Parallel()
	for _, brk := range []sim.Break{-1, sim.BreakQuarantineCheck + 1} {
		var err error
		require.NotPanics(t, func() { _, err = sim.Run(sim.Config{Seed: 1, Break: brk}) })
		require.ErrorIs(t, err, sim.ErrInvalidConfig, brk)
		require.ErrorContains(t, err, "Break", brk)
	}
	for _, brk := range []sim.Break{sim.BreakNone, sim.BreakQuarantineCheck} {
		require.NoError(t, sim.Config{Break: brk}.Validate(), brk)
	}
}
