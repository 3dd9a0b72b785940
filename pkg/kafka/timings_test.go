package kafka_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// The clock is read for the records' timings when something reads them: a
// Logger alone (no metrics hook) logs each record's wait and duration.
func TestALoggerAloneGetsTheTimings(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		p := newProcessor(t, kafka.Config{Handler: func(context.Context, kafka.Record) error {
			time.Sleep(3 * time.Millisecond)
			return nil
		}, Logger: logs.Logger()})
		_, err := p.Process(context.Background(), records(t, "t-0/1:a", "t-0/2:a"))
		require.NoError(t, err)
		second := logs.line(t, "t-0/2")
		require.InDelta(t, float64(3*time.Millisecond), second["duration"], 0)
		require.InDelta(t, float64(3*time.Millisecond), second["wait"], 0, "t-0/2 waited for t-0/1")
	})
}
