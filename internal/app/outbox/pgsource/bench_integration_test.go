//go:build integration

package pgsource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource/nudge"
)

// ackSink acknowledges every message and counts them.
type ackSink struct{ n int }

func (s *ackSink) Send(_ context.Context, msgs []outbox.Message, _ string) []error {
	s.n += len(msgs)
	return make([]error, len(msgs))
}

// handlerSender hands each nudge to the relay's handler in process: the
// asynchronous invocation Lambda would make, without Lambda's queueing.
type handlerSender struct{ relay *pgsource.Relay }

func (h handlerSender) Send(ctx context.Context, p nudge.Payload) error {
	event, err := json.Marshal(p)
	if err != nil {
		return err
	}
	// The invocation has its own context: not the send's, whose timeout
	// bounds only Lambda's queueing of the event.
	_, err = h.relay.Handle(context.WithoutCancel(ctx), event)
	return err
}

// From a transition's commit to its message acknowledged by the sink, on
// the local server: the store's statement, the writer's nudge (every
// commit nudges: Interval 1 ns), and the Drain the nudge runs. Lambda's
// asynchronous invocation (its queue and the relay's start) is not in it.
func BenchmarkCommitToPublish(b *testing.B) {
	bn := setup(b)
	sink := &ackSink{}
	relay := bn.relay(b, pgsource.Config{Sink: sink})
	nudger, err := nudge.NewCoalescer(nudge.CoalescerConfig{Sender: handlerSender{relay}, Interval: time.Nanosecond})
	require.NoError(b, err)
	bn.create(b, "job-1", 1) // claimed: each op is one renewal
	_, err = relay.Drain(b.Context())
	require.NoError(b, err)
	sink.n = 0
	var commit time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		require.NoError(b, bn.tryAdvance(b.Context(), "job-1", 1))
		commit += time.Since(start)
		require.NoError(b, nudger.Nudge(b.Context()))
	}
	b.StopTimer()
	require.Equal(b, b.N, sink.n, "one message per commit, published before the next commit")
	require.Zero(b, bn.rows(b))
	b.ReportMetric(float64(commit.Nanoseconds())/float64(b.N), "commit-ns/op")
}

// Drain's cost per message with 1, 10 and 100 jobs of 10 rows each waiting
// (the store's own rows, written once and put back before each Drain).
func BenchmarkDrain(b *testing.B) {
	for _, jobs := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			bn := setup(b)
			for _, id := range jobIDs("job", jobs) {
				bn.create(b, id, 9)
			}
			_, err := bn.db.ExecContext(b.Context(), "CREATE TABLE outbox_copy AS SELECT * FROM job_outbox; DELETE FROM job_outbox")
			require.NoError(b, err)
			sink := &ackSink{}
			relay := bn.relay(b, pgsource.Config{Sink: sink})
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				_, err := bn.db.ExecContext(b.Context(), "INSERT INTO job_outbox SELECT * FROM outbox_copy")
				require.NoError(b, err)
				b.StartTimer()
				rep, err := relay.Drain(b.Context())
				require.NoError(b, err)
				require.Equal(b, jobs*10, rep.Rows)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*jobs*10), "ns/msg")
		})
	}
}
