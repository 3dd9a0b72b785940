package sim_test

import (
	"database/sql"
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
// unknown Break, Transport or Store, a Break of the other transport's, or
// a DB missing for StorePostgres or given to StoreMemory.
func TestRunRefusesAWorldItCannotBuild(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg   sim.Config
		field string
	}{
		"a break below the first":         {sim.Config{Break: -1}, "Break"},
		"a break past the last":           {sim.Config{Break: sim.BreakCommitFence + 1}, "Break"},
		"a transport below the first":     {sim.Config{Transport: -1}, "Transport"},
		"a transport past the last":       {sim.Config{Transport: sim.TransportKafka + 1}, "Transport"},
		"the quarantine's break on kafka": {sim.Config{Break: sim.BreakQuarantineCheck, Transport: sim.TransportKafka}, "Break"},
		"kafka's break on sqs":            {sim.Config{Break: sim.BreakCommitFence, Transport: sim.TransportSQS}, "Break"},
		"a store below the first":         {sim.Config{Store: -1}, "Store"},
		"a store past the last":           {sim.Config{Store: sim.StorePostgres + 1}, "Store"},
		"postgres without a database":     {sim.Config{Store: sim.StorePostgres}, "DB"},
		"a database for the memory store": {sim.Config{DB: &sql.DB{}}, "DB"},
		"the outbox relay on memory":      {sim.Config{OutboxRelay: true}, "OutboxRelay"},
	} {
		tc.cfg.Seed = 1
		var err error
		require.NotPanics(t, func() { _, err = sim.Run(tc.cfg) }, name)
		require.ErrorIs(t, err, sim.ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
	}
	for _, cfg := range []sim.Config{
		{}, {Transport: sim.TransportKafka},
		{Break: sim.BreakQuarantineCheck}, {Break: sim.BreakCommitFence, Transport: sim.TransportKafka},
		{Store: sim.StorePostgres, DB: &sql.DB{}}, {Store: sim.StorePostgres, DB: &sql.DB{}, Transport: sim.TransportKafka},
		{Store: sim.StorePostgres, DB: &sql.DB{}, OutboxRelay: true},
	} {
		require.NoError(t, cfg.Validate(), "%+v", cfg)
	}
}
