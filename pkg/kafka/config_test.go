package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// New refuses each Config that cannot work with an error wrapping
// ErrInvalidConfig that names the field, and accepts each bound at exactly
// its value.
func TestNewRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	refused := map[string]struct {
		cfg   kafka.Config
		field string // the field's name, and for a bound its value
	}{
		"nil handler":          {kafka.Config{}, "Handler is nil"},
		"negative concurrency": {kafka.Config{Handler: noop, Concurrency: -1}, "Concurrency -1 is negative"},
		"negative margin":      {kafka.Config{Handler: noop, DeadlineMargin: -time.Nanosecond}, "DeadlineMargin -1ns is negative"},
		"negative reserve":     {kafka.Config{Handler: noop, ResponseReserve: -time.Nanosecond}, "ResponseReserve -1ns is negative"},
		"reserve over margin": {kafka.Config{Handler: noop, DeadlineMargin: time.Second, ResponseReserve: time.Second + time.Nanosecond},
			"ResponseReserve 1.000000001s exceeds the DeadlineMargin 1s"},
		"default reserve over": {kafka.Config{Handler: noop, DeadlineMargin: kafka.DefaultResponseReserve - time.Nanosecond},
			"ResponseReserve 200ms exceeds the DeadlineMargin 199.999999ms"},
		"reserve over default": {kafka.Config{Handler: noop, ResponseReserve: kafka.DefaultDeadlineMargin + time.Nanosecond},
			"ResponseReserve 1.000000001s exceeds the DeadlineMargin 1s"},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := kafka.New(tc.cfg)
			require.ErrorIs(t, err, kafka.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.field)
			require.Nil(t, p)
			require.Equal(t, err, tc.cfg.Validate(), "New says what Validate says")
		})
	}

	accepted := map[string]kafka.Config{
		"defaults":                    {Handler: noop},
		"concurrency 0, every lane":   {Handler: noop, Concurrency: 0},
		"concurrency 1":               {Handler: noop, Concurrency: 1},
		"reserve equal to the margin": {Handler: noop, DeadlineMargin: time.Second, ResponseReserve: time.Second},
		"least margin and reserve":    {Handler: noop, DeadlineMargin: time.Nanosecond, ResponseReserve: time.Nanosecond},
		"default margin, its reserve": {Handler: noop, ResponseReserve: kafka.DefaultDeadlineMargin},
		"margin at default reserve":   {Handler: noop, DeadlineMargin: kafka.DefaultResponseReserve},
		"every field": {Handler: noop, Concurrency: 4, StopOnFirstFailure: true, DeadLetter: &deadLetters{},
			LaneKey: func(kafka.Record) (string, bool) { return "", true }, Now: time.Now, Metrics: func(kafka.BatchMetrics) {}},
	}
	for name, cfg := range accepted {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, cfg.Validate())
			p, err := kafka.New(cfg)
			require.NoError(t, err)
			require.NotNil(t, p)
		})
	}
}
