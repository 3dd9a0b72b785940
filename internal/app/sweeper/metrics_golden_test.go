package sweeper_test

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
)

// goldenMetricLines returns the EMF records among logs, their log time
// and any Timestamp other than the sweeper's clock (the held groups' is
// the wall clock's) replaced by placeholders, so that the rest can be
// compared byte for byte.
func goldenMetricLines(logs string, clock time.Time) string {
	logTime := regexp.MustCompile(`^\{"time":"[^"]*"`)
	stamp := regexp.MustCompile(`"Timestamp":[0-9]+`)
	ours := `"Timestamp":` + strconv.FormatInt(clock.UnixMilli(), 10)
	var out strings.Builder
	for line := range strings.Lines(logs) {
		if !strings.Contains(line, `"_aws"`) {
			continue
		}
		line = logTime.ReplaceAllString(line, `{"time":"T"`)
		line = stamp.ReplaceAllStringFunc(line, func(s string) string {
			if s == ours {
				return `"Timestamp":CLOCK`
			}
			return `"Timestamp":WALL`
		})
		out.WriteString(line)
	}
	return out.String()
}

// The sweeper's EMF records byte for byte, as the template's alarms and
// the CloudWatch Logs extraction read them: a run that measures every
// gauge, then one that cannot read the repair cursor nor count the events
// queue's holds.
func TestTheSweepersEMFRecordsAreUnchanged(t *testing.T) {
	t.Parallel()
	q := newCountingHolds()
	b := setupRepair(t, func(c *sweeper.Config) {
		c.FunctionName = "stack-sweeper"
		c.Quarantine, c.CommandsQueue, c.EventsQueue = q, commandsQueue, eventsQueue
	})
	park(t, q, commandsQueue, "job-held", "1001", b.clock.Now())
	b.lifecycle(t, "job-1", "t-1", 1)
	b.clock.Advance(time.Minute)
	b.lifecycle(t, "job-2", "t-1", 1)
	b.clock.Advance(sweeper.DefaultRepairAfter + 3*time.Minute)
	b.cfg.MaxItems = 1
	limited, err := sweeper.New(b.cfg)
	require.NoError(t, err)
	_, err = limited.Run(b.ctx, sweeper.Options{})
	require.NoError(t, err)
	require.Equal(t, ``+
		`{"time":"T","level":"INFO","msg":"quarantine: held groups","_aws":{"CloudWatchMetrics":[{"Dimensions":[["Queue"]],"Metrics":[{"Name":"HeldGroups","Unit":"Count"}],"Namespace":"fifoworker/quarantine"}],"Timestamp":CLOCK},"Queue":"stack-commands.fifo","HeldGroups":1}`+"\n"+
		`{"time":"T","level":"INFO","msg":"quarantine: held groups","_aws":{"CloudWatchMetrics":[{"Dimensions":[["Queue"]],"Metrics":[{"Name":"HeldGroups","Unit":"Count"}],"Namespace":"fifoworker/quarantine"}],"Timestamp":CLOCK},"Queue":"stack-events.fifo","HeldGroups":0}`+"\n"+
		`{"time":"T","level":"INFO","msg":"sweep: metrics","_aws":{"CloudWatchMetrics":[{"Dimensions":[["FunctionName"]],"Metrics":[{"Name":"RepairLagSeconds","Unit":"Seconds"},{"Name":"RecheckLagSeconds","Unit":"Seconds"},{"Name":"UnmeasuredGauges","Unit":"Count"}],"Namespace":"fifoworker/sweeper"}],"Timestamp":CLOCK},"FunctionName":"stack-sweeper","RepairLagSeconds":240,"RecheckLagSeconds":0,"UnmeasuredGauges":0}`+"\n",
		goldenMetricLines(b.logs.String(), b.clock.Now()))

	q.failHolds[eventsQueue] = errors.New("dynamodb: 500")
	b.cfg.RepairCursor = &failingCursor{}
	failing, err := sweeper.New(b.cfg)
	require.NoError(t, err)
	since := len(b.logs.String())
	_, err = failing.Run(b.ctx, sweeper.Options{})
	require.Error(t, err)
	require.Equal(t, ``+
		`{"time":"T","level":"INFO","msg":"quarantine: held groups","_aws":{"CloudWatchMetrics":[{"Dimensions":[["Queue"]],"Metrics":[{"Name":"HeldGroups","Unit":"Count"}],"Namespace":"fifoworker/quarantine"}],"Timestamp":CLOCK},"Queue":"stack-commands.fifo","HeldGroups":1}`+"\n"+
		`{"time":"T","level":"INFO","msg":"sweep: metrics","_aws":{"CloudWatchMetrics":[{"Dimensions":[["FunctionName"]],"Metrics":[{"Name":"RecheckLagSeconds","Unit":"Seconds"},{"Name":"UnmeasuredGauges","Unit":"Count"}],"Namespace":"fifoworker/sweeper"}],"Timestamp":CLOCK},"FunctionName":"stack-sweeper","RecheckLagSeconds":0,"UnmeasuredGauges":2}`+"\n",
		goldenMetricLines(b.logs.String()[since:], b.clock.Now()))
}
