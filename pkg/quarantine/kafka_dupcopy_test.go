package quarantine_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// A copy written twice (the brokers' answer lost, the Operator sending it
// again) lands next to the first, most often in the same batch. The first
// runs and is done; the second is a copy of a record no longer parked, and
// is dropped: it must neither run nor hold the key again as if an older
// record's copy had been lost.
func TestKafkaACopyWrittenTwiceInOneBatchIsDropped(t *testing.T) {
	t.Parallel()
	r := newKafkaRig(t, 3)
	r.does["bad"] = kafka.Permanent(errors.New("malformed"))
	failed, _ := r.run(t, krec(0, 1, "job-1", "bad"), krec(0, 2, "job-1", "later"))
	require.Empty(t, failed)

	epoch := r.redrive(t, "job-1")
	r.does["bad"] = nil
	c1, c2 := r.copyOf(t, "job-1", 0, 1, epoch, 10), r.copyOf(t, "job-1", 0, 2, epoch, 12)
	again := c1
	again.Offset = 11
	failed, ran := r.run(t, c1, again, c2)
	require.Empty(t, failed)
	require.Equal(t, []string{"bad", "later"}, ran, "each parked record runs once, in order")
	require.Equal(t, quarantine.StateReleased, r.hold(t, "job-1").State)
}
