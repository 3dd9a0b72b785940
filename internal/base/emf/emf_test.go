package emf_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/emf"
)

// A record of two dimensions and three metrics: one dimension set naming
// both dimensions in order, every metric declared with its unit in order,
// and every value a top-level member of the document.
var several = emf.Record{
	Namespace:  "fifoworker/test",
	Time:       time.UnixMilli(1700000000123),
	Dimensions: []emf.Dimension{{Name: "Queue", Value: "events.fifo"}, {Name: "FunctionName", Value: "stack-worker"}},
	Metrics: []emf.Metric{
		{Name: "Parked", Unit: emf.Count, Value: 2},
		{Name: "LagSeconds", Unit: emf.Seconds, Value: 90},
		{Name: "Dropped", Unit: emf.Count, Value: 0},
	},
}

const severalDirective = `"_aws":{"CloudWatchMetrics":[{"Dimensions":[["Queue","FunctionName"]],"Metrics":[{"Name":"Parked","Unit":"Count"},{"Name":"LagSeconds","Unit":"Seconds"},{"Name":"Dropped","Unit":"Count"}],"Namespace":"fifoworker/test"}],"Timestamp":1700000000123}`

func TestWriteLineWritesOneSortedJSONLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, several.WriteLine(&buf))
	require.Equal(t, `{"Dropped":0,"FunctionName":"stack-worker","LagSeconds":90,"Parked":2,"Queue":"events.fifo",`+severalDirective+"}\n", buf.String())
}

func TestLogMakesTheJSONLogRecordTheDocument(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	several.Log(context.Background(), log, "test: metrics")
	require.Equal(t, `{"level":"INFO","msg":"test: metrics",`+severalDirective+`,"Queue":"events.fifo","FunctionName":"stack-worker","Parked":2,"LagSeconds":90,"Dropped":0}`+"\n", buf.String())
}

func TestAttrsAreTheDirectiveTheDimensionsThenTheMetrics(t *testing.T) {
	t.Parallel()
	var keys []string
	for _, a := range several.Attrs() {
		keys = append(keys, a.Key)
	}
	require.Equal(t, []string{"_aws", "Queue", "FunctionName", "Parked", "LagSeconds", "Dropped"}, keys)
	require.Equal(t, int64(90), several.Attrs()[4].Value.Int64())
}

// A record is written in one Write, so that lines from concurrent writers
// sharing a serialised writer (os.Stdout) never interleave; a writer that
// fails is reported with the record's namespace.
type recordingWriter struct {
	writes int
	err    error
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.writes++
	return len(p), w.err
}

func TestWriteLineIsOneWriteAndReportsAFailedOne(t *testing.T) {
	t.Parallel()
	w := &recordingWriter{}
	require.NoError(t, several.WriteLine(w))
	require.Equal(t, 1, w.writes)

	full := errors.New("disk full")
	err := several.WriteLine(&recordingWriter{err: full})
	require.ErrorIs(t, err, full)
	require.ErrorContains(t, err, "emf: write the fifoworker/test record")
}

// A metric of zero is written, not left out: the gauges the alarms watch
// are 0 when nothing is wrong, and a missing one reads as missing data.
func TestAZeroValueIsWritten(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := emf.Record{Namespace: "ns", Time: time.UnixMilli(0), Dimensions: []emf.Dimension{{Name: "Queue", Value: "q"}},
		Metrics: []emf.Metric{{Name: "HeldGroups", Unit: emf.Count}}}
	require.NoError(t, r.WriteLine(&buf))
	require.Equal(t, `{"HeldGroups":0,"Queue":"q","_aws":{"CloudWatchMetrics":[{"Dimensions":[["Queue"]],"Metrics":[{"Name":"HeldGroups","Unit":"Count"}],"Namespace":"ns"}],"Timestamp":0}}`+"\n", buf.String())
}
