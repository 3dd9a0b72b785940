package quarantine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
)

// overtaking is a Sender whose first send begins another redrive of the
// group: an operator who ran a second one.
type overtaking struct {
	store *quarantine.MemoryStore
	once  *sync.Once
}

func (s overtaking) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	var err error
	s.once.Do(func() { _, err = s.store.BeginRedrive(ctx, "unit.fifo", *in.MessageGroupId, time.Now()) })
	return &sqs.SendMessageOutput{}, err
}

// TestARedriveTakenOverSaysByWhich: a redrive that another one overtakes
// returns with the group draining, and its report names the epoch that
// took over, so that its caller tells it from a redrive that is still
// draining without a read of its own. One that is not overtaken says 0.
func TestARedriveTakenOverSaysByWhich(t *testing.T) {
	t.Parallel()
	store, _, _ := holdTwo(t) // draining under epoch 1
	redrive := func(s quarantine.Sender) quarantine.RedriveReport {
		op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: "unit.fifo", QueueURL: "http://127.0.0.1:1/q/unit.fifo", Sender: s})
		require.NoError(t, err)
		rep, err := op.Redrive(t.Context(), "g", false)
		require.NoError(t, err)
		return rep
	}

	rep := redrive(overtaking{store: store, once: new(sync.Once)})
	require.Equal(t, int64(2), rep.Epoch)
	require.Equal(t, quarantine.StateDraining, rep.State)
	require.Equal(t, int64(3), rep.TakenOverBy)
	require.Equal(t, "another redrive (epoch 3) took over", rep.Cause)

	rep = redrive(overtaking{store: store, once: new(sync.Once)})
	require.Equal(t, int64(4), rep.Epoch)
	require.Equal(t, int64(5), rep.TakenOverBy)

	rep = redrive(&quarantinetest.Sends{})
	require.Equal(t, int64(6), rep.Epoch)
	require.Equal(t, quarantine.StateDraining, rep.State, "sent, not waited for")
	require.Zero(t, rep.TakenOverBy)
}
