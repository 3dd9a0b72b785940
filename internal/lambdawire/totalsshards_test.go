package lambdawire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// recordedShards is a memory store whose CheckShards answers from a
// script, and counts its calls.
type recordedShards struct {
	*projection.MemoryStore
	answers  []error
	checks   int
	verifies int
}

func (r *recordedShards) VerifyShards(ctx context.Context) error {
	r.verifies++
	return r.CheckShards(ctx)
}

func (r *recordedShards) CheckShards(context.Context) error {
	r.checks++
	if len(r.answers) == 0 {
		return nil
	}
	err := r.answers[0]
	r.answers = r.answers[1:]
	return err
}

// A store whose shard count the table refuses writes nothing, Apply and
// Recover alike, and is checked again at each write until the check
// passes; then never again.
func TestCheckedShardsRefusesEveryWriteUntilTheCountIsTheRecordedOne(t *testing.T) {
	t.Parallel()
	changed := fmt.Errorf("%w: Shards is 16, but the Totals table totals was written with 32", projection.ErrShardsChanged)
	inner := &recordedShards{MemoryStore: projection.NewMemoryStore(), answers: []error{changed, changed, errors.New("throttled")}}
	c := &checkedShards{shardsChecker: inner}
	evs := projectiontest.Lifecycle("job-42", "t-1")
	ctx := t.Context()

	_, err := c.Apply(ctx, projection.ViewOfEvent(&evs[1]), evs[1].Delta)
	require.ErrorIs(t, err, projection.ErrShardsChanged)
	_, err = c.Recover(ctx, projection.ViewOfEvent(&evs[2]))
	require.ErrorIs(t, err, projection.ErrShardsChanged)
	_, err = c.Apply(ctx, projection.ViewOfEvent(&evs[1]), evs[1].Delta)
	require.ErrorContains(t, err, "throttled")
	_, err = inner.View(ctx, "job-42")
	require.ErrorIs(t, err, projection.ErrNotFound, "nothing written")
	require.Equal(t, 3, inner.checks)

	res, err := c.Apply(ctx, projection.ViewOfEvent(&evs[1]), evs[1].Delta)
	require.NoError(t, err)
	require.Equal(t, projection.Applied, res.Outcome)
	_, err = c.Recover(ctx, projection.ViewOfEvent(&evs[2]))
	require.NoError(t, err)
	require.Equal(t, 4, inner.checks, "checked until it passed, then never again")
	require.Zero(t, inner.verifies)

	// The sweeper's only verifies.
	inner = &recordedShards{MemoryStore: projection.NewMemoryStore(), answers: []error{changed}}
	c = &checkedShards{shardsChecker: inner, verifyOnly: true}
	_, err = c.Recover(ctx, projection.ViewOfEvent(&evs[2]))
	require.ErrorIs(t, err, projection.ErrShardsChanged)
	_, err = c.Recover(ctx, projection.ViewOfEvent(&evs[2]))
	require.NoError(t, err)
	require.Equal(t, 2, inner.verifies)
}

// TOTALS_SHARDS is read by the functions that write the totals on DynamoDB
// (the projector on either transport, the sweeper), bounded at exactly 1
// and projection.MaxShards.
func TestTotalsShardsIsBoundedAtExactlyItsBounds(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	cfg := aws.Config{Region: "eu-west-1"}
	functions := map[string]func(*startup.Env) error{
		"projector":       func(env *startup.Env) error { _, err := Projector(env, cfg, log); return err },
		"kafka projector": func(env *startup.Env) error { _, err := ProjectorKafka(env, cfg, log); return err },
		"sweeper":         func(env *startup.Env) error { _, err := Sweeper(env, cfg, log); return err },
	}
	for name, open := range functions {
		for v, ok := range map[string]bool{
			"0": false, "1": true, strconv.Itoa(projection.MaxShards): true, strconv.Itoa(projection.MaxShards + 1): false, "many": false,
		} {
			err := open(startup.NewEnvFrom(map[string]string{"TOTALS_SHARDS": v}))
			require.Error(t, err, "%s: the other settings are missing", name)
			if ok {
				require.NotContains(t, err.Error(), "TOTALS_SHARDS", "%s %s", name, v)
			} else {
				require.ErrorContains(t, err, `TOTALS_SHARDS="`+v+`"`, name)
			}
		}
	}
}
