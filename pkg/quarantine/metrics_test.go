package quarantine_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

func TestBatchMetricsWritesOneEMFLineOnlyWhenSomethingWasParkedOrDropped(t *testing.T) {
	var buf bytes.Buffer
	hook := quarantine.BatchMetrics(&buf, "commands.fifo")
	hook(fifo.BatchMetrics{Messages: []fifo.MessageMetrics{{Outcome: fifo.Succeeded}}})
	require.Empty(t, buf.String(), "a batch that parked nothing writes nothing")

	hook(fifo.BatchMetrics{Messages: []fifo.MessageMetrics{{Outcome: fifo.Parked}, {Outcome: fifo.Parked}, {Outcome: fifo.Dropped}, {Outcome: fifo.Succeeded}}})
	var doc struct {
		Queue           string
		MessagesParked  int
		MessagesDropped int
		AWS             struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc), buf.String())
	require.Equal(t, "commands.fifo", doc.Queue)
	require.Equal(t, 2, doc.MessagesParked)
	require.Equal(t, 1, doc.MessagesDropped)
	require.NotZero(t, doc.AWS.Timestamp)
	require.Len(t, doc.AWS.CloudWatchMetrics, 1)
	d := doc.AWS.CloudWatchMetrics[0]
	require.Equal(t, quarantine.MetricsNamespace, d.Namespace)
	require.Equal(t, [][]string{{"Queue"}}, d.Dimensions)
	require.ElementsMatch(t, []struct{ Name, Unit string }{{"MessagesParked", "Count"}, {"MessagesDropped", "Count"}}, d.Metrics)
}

func TestLoggedBatchMetricsIsAnEMFDocumentInAJSONLogRecord(t *testing.T) {
	var buf bytes.Buffer
	hook := quarantine.LoggedBatchMetrics(slog.New(slog.NewJSONHandler(&buf, nil)), "events.fifo")
	hook(fifo.BatchMetrics{Messages: []fifo.MessageMetrics{{Outcome: fifo.Succeeded}}})
	require.Empty(t, buf.String())
	hook(fifo.BatchMetrics{Messages: []fifo.MessageMetrics{{Outcome: fifo.Parked}}})
	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc), buf.String())
	require.Equal(t, "events.fifo", doc["Queue"])
	require.EqualValues(t, 1, doc["MessagesParked"])
	require.EqualValues(t, 0, doc["MessagesDropped"])
	directive, ok := doc["_aws"].(map[string]any)
	require.True(t, ok, "a top-level _aws directive: %s", buf.String())
	cw := directive["CloudWatchMetrics"].([]any)[0].(map[string]any)
	require.Equal(t, quarantine.MetricsNamespace, cw["Namespace"])
	require.Len(t, cw["Metrics"], 2)
}

func TestHeldGroupsIsAGauge(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, quarantine.HeldGroups(&buf, "events.fifo", 0, time.Unix(1700000000, 0)))
	require.JSONEq(t, `{"Queue":"events.fifo","HeldGroups":0,"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"fifoworker/quarantine","Dimensions":[["Queue"]],"Metrics":[{"Name":"HeldGroups","Unit":"Count"}]}]}}`, buf.String())
}
