//go:build integration

package pgsource_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
)

// drainMetrics are the metric records a relay logged, in order: each the
// record's fields (the metrics by name, the dimension, _aws).
func drainMetrics(t *testing.T, logs *testenv.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		if rec["msg"] == "pgsource: metrics" {
			out = append(out, rec)
		}
	}
	return out
}

// Each Drain writes, under its FunctionName, the rows it published and the
// age of the oldest row it left (whole seconds by the relay's clock, from
// the row's created_at), 0 once the table is empty; without a
// FunctionName, nothing.
func TestDrainReportsTheOldestRowsAgeAndTheRowsPublished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-001", 1)
	b.create(t, "job-002", 1)
	now := time.UnixMilli(1_800_000_000_000)
	for _, r := range []struct {
		job     string
		version int
		age     int64 // ms
	}{{"job-001", 0, 100_000}, {"job-001", 1, 90_000}, {"job-002", 0, 30_999}, {"job-002", 1, 10_000}} {
		_, err := b.db.ExecContext(t.Context(), `UPDATE job_outbox SET created_at = $3 WHERE job_id = $1 AND version = $2`,
			r.job, r.version, now.UnixMilli()-r.age)
		require.NoError(t, err)
	}
	b.sink.refuse = func(m outbox.Message) error {
		if m.JobID == "job-002" {
			return errors.New("throttled")
		}
		return nil
	}
	logs := &testenv.Buffer{}
	cfg := pgsource.Config{Now: func() time.Time { return now }, Logger: slog.New(slog.NewJSONHandler(logs, nil)), FunctionName: "relay-fn"}
	rep, err := b.relay(t, cfg).Drain(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, rep.Rows, "job-001's two rows")
	b.sink.refuse = nil
	rep, err = b.relay(t, cfg).Drain(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, rep.Rows, "job-002's")

	got := drainMetrics(t, logs)
	require.Len(t, got, 2, "one record a Drain")
	for i, want := range []float64{30, 0} { // job-002's oldest row, 30.999 s old; then none
		require.Equal(t, "relay-fn", got[i]["FunctionName"], i)
		require.Equal(t, want, got[i][pgsource.MetricOldestAge], i)
		require.Equal(t, float64(2), got[i][pgsource.MetricPublished], i)
		aws, _ := json.Marshal(got[i]["_aws"])
		require.Contains(t, string(aws), `"Namespace":"`+pgsource.MetricsNamespace+`"`, i)
	}

	quiet := &testenv.Buffer{}
	b.create(t, "job-003", 0)
	_, err = b.relay(t, pgsource.Config{Logger: slog.New(slog.NewJSONHandler(quiet, nil))}).Drain(t.Context())
	require.NoError(t, err)
	require.Empty(t, drainMetrics(t, quiet), "no FunctionName, no metrics")
}
