package faultproxy_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
)

func TestPostgresOperation(t *testing.T) {
	for sql, want := range map[string]string{
		"UPDATE jobs SET x = 1":                  "UPDATE",
		"  \n\twith upd AS (UPDATE jobs) SELECT": "WITH",
		"-- a note\n/* and */ insert INTO t":     "INSERT",
		"begin":                                  "BEGIN",
		"":                                       "SYNC",
		"-- only a comment":                      "SYNC",
		"/* unterminated":                        "SYNC",
		"(SELECT 1)":                             "SYNC",
	} {
		require.Equal(t, want, faultproxy.PostgresOperation(sql), "%q", sql)
	}
}

func TestPostgresConfigRefusesWhatItCannotRun(t *testing.T) {
	for field, cfg := range map[string]faultproxy.PostgresConfig{
		"Target":      {Target: "127.0.0.1"},
		"ServerError": {Target: "127.0.0.1:5432", Rates: faultproxy.Rates{ServerError: 0.1}},
		"Throttle":    {Target: "127.0.0.1:5432", Operations: map[string]faultproxy.Rates{"INSERT": {Throttle: 0.1}}},
		"add up":      {Target: "127.0.0.1:5432", Rates: faultproxy.Rates{Reset: 0.5, Drop: 0.3, Stall: 0.3}},
		"MaxLatency":  {Target: "127.0.0.1:5432", MinLatency: 2, MaxLatency: 1},
	} {
		_, err := faultproxy.NewPostgres(cfg)
		require.ErrorIs(t, err, faultproxy.ErrInvalidConfig, field)
		if field != "add up" {
			require.ErrorContains(t, err, map[string]string{"ServerError": "server_error", "Throttle": "throttle"}[field]+"", field)
		}
	}
	_, err := faultproxy.New(faultproxy.Config{Service: faultproxy.SQS, Target: "http://127.0.0.1:1", Rates: faultproxy.Rates{Stall: 0.1}})
	require.ErrorIs(t, err, faultproxy.ErrInvalidConfig, "the HTTP proxy does not stall")
}
