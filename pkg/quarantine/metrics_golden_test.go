package quarantine_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The quarantine's EMF records byte for byte, as the template's alarms and
// the CloudWatch Logs extraction read them: the key order, the units, the
// namespace and the dimension. Inside a synctest bubble time.Now is
// 2000-01-01T00:00:00Z, so the records written with the wall clock are
// fixed too.
func TestTheQuarantinesEMFRecordsAreUnchanged(t *testing.T) {
	batch := func(outcomes ...fifo.Outcome) fifo.BatchMetrics {
		var m fifo.BatchMetrics
		for _, o := range outcomes {
			m.Messages = append(m.Messages, fifo.MessageMetrics{Outcome: o})
		}
		return m
	}
	synctest.Test(t, func(t *testing.T) {
		var lines bytes.Buffer
		hook := quarantine.BatchMetrics(&lines, "commands.fifo")
		hook(batch(fifo.Parked, fifo.Parked, fifo.Dropped, fifo.Succeeded))
		hook(batch(fifo.Dropped))
		hook(batch(fifo.Succeeded))
		require.NoError(t, quarantine.HeldGroups(&lines, "events.fifo", 3, time.UnixMilli(1700000000123)))
		require.Equal(t, ``+
			`{"MessagesDropped":1,"MessagesParked":2,"Queue":"commands.fifo","_aws":{"CloudWatchMetrics":[{"Dimensions":[["Queue"]],"Metrics":[{"Name":"MessagesParked","Unit":"Count"},{"Name":"MessagesDropped","Unit":"Count"}],"Namespace":"fifoworker/quarantine"}],"Timestamp":946684800000}}`+"\n"+
			`{"MessagesDropped":1,"MessagesParked":0,"Queue":"commands.fifo","_aws":{"CloudWatchMetrics":[{"Dimensions":[["Queue"]],"Metrics":[{"Name":"MessagesParked","Unit":"Count"},{"Name":"MessagesDropped","Unit":"Count"}],"Namespace":"fifoworker/quarantine"}],"Timestamp":946684800000}}`+"\n"+
			`{"HeldGroups":3,"Queue":"events.fifo","_aws":{"CloudWatchMetrics":[{"Dimensions":[["Queue"]],"Metrics":[{"Name":"HeldGroups","Unit":"Count"}],"Namespace":"fifoworker/quarantine"}],"Timestamp":1700000000123}}`+"\n",
			lines.String())

		var logs bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&logs, nil))
		logged := quarantine.LoggedBatchMetrics(log, "events.fifo")
		logged(batch(fifo.Parked))
		logged(batch(fifo.Succeeded))
		quarantine.LogHeldGroups(context.Background(), log, "commands.fifo", 0, time.Now())
		require.Equal(t, ``+
			`{"time":"2000-01-01T00:00:00Z","level":"INFO","msg":"quarantine: metrics","_aws":{"CloudWatchMetrics":[{"Dimensions":[["Queue"]],"Metrics":[{"Name":"MessagesParked","Unit":"Count"},{"Name":"MessagesDropped","Unit":"Count"}],"Namespace":"fifoworker/quarantine"}],"Timestamp":946684800000},"Queue":"events.fifo","MessagesParked":1,"MessagesDropped":0}`+"\n"+
			`{"time":"2000-01-01T00:00:00Z","level":"INFO","msg":"quarantine: held groups","_aws":{"CloudWatchMetrics":[{"Dimensions":[["Queue"]],"Metrics":[{"Name":"HeldGroups","Unit":"Count"}],"Namespace":"fifoworker/quarantine"}],"Timestamp":946684800000},"Queue":"commands.fifo","HeldGroups":0}`+"\n",
			logs.String())
	})
}
