package pgsource_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
)

type nopSink struct{}

func (nopSink) Send(_ context.Context, msgs []outbox.Message, _ string) []error {
	return make([]error, len(msgs))
}

// New refuses each configuration that cannot work, naming the field, and
// accepts each bound at exactly its value.
func TestNewRefusesEachInvalidConfig(t *testing.T) {
	t.Parallel()
	db := new(sql.DB) // never used: New does not connect
	valid := pgsource.Config{DB: db, Sink: nopSink{}}
	for _, tc := range []struct {
		field  string
		mutate func(*pgsource.Config)
	}{
		{"DB", func(c *pgsource.Config) { c.DB = nil }},
		{"Sink", func(c *pgsource.Config) { c.Sink = nil }},
		{"Jobs", func(c *pgsource.Config) { c.Jobs = -1 }},
		{"Jobs", func(c *pgsource.Config) { c.Jobs = pgsource.MaxJobs + 1 }},
		{"RowsPerJob", func(c *pgsource.Config) { c.RowsPerJob = -1 }},
		{"RowsPerJob", func(c *pgsource.Config) { c.RowsPerJob = pgsource.MaxRowsPerJob + 1 }},
		{"MaxRows", func(c *pgsource.Config) { c.MaxRows = -1 }},
		{"Margin", func(c *pgsource.Config) { c.Margin = -1 }},
	} {
		cfg := valid
		tc.mutate(&cfg)
		r, err := pgsource.New(cfg)
		require.ErrorIs(t, err, pgsource.ErrInvalidConfig, tc.field)
		require.ErrorContains(t, err, tc.field)
		require.Nil(t, r)
	}
	for _, cfg := range []pgsource.Config{
		valid,
		{DB: db, Sink: nopSink{}, Jobs: pgsource.MaxJobs, RowsPerJob: pgsource.MaxRowsPerJob, MaxRows: 1, Margin: 1},
	} {
		_, err := pgsource.New(cfg)
		require.NoError(t, err)
	}
}
