//go:build integration

package quarantine_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// A write refused on the hold's version is computed again and sent again,
// at most 12 times in all (the package's maxRounds, as on DynamoDB): a
// trigger refuses the hold's first n updates, as a competing writer that
// got there first would. With 11 refused the 12th write lands; with 12
// the call fails and nothing is written.
func TestPostgresAWriteIsSentAtMostTwelveTimes(t *testing.T) {
	ctx := t.Context()
	db := postgresDB(t)
	_, err := db.ExecContext(ctx, `CREATE TABLE refusals (n int NOT NULL);
		INSERT INTO refusals VALUES (0);
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			UPDATE refusals SET n = n - 1 WHERE n > 0;
			IF FOUND THEN RETURN NULL; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse BEFORE UPDATE ON quarantine_holds FOR EACH ROW EXECUTE FUNCTION refuse();`)
	require.NoError(t, err)
	store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	require.NoError(t, err)
	const queue = "orders.fifo"
	_, err = store.Park(ctx, queue, "g", []quarantine.Parked{{Sequence: seqKey(t, "1")}}, true, "boom", t0)
	require.NoError(t, err)
	refuse := func(n int) {
		_, err := db.ExecContext(ctx, `UPDATE refusals SET n = $1`, n)
		require.NoError(t, err)
	}
	before, err := store.Hold(ctx, queue, "g")
	require.NoError(t, err)
	refuse(12)
	_, err = store.BeginRedrive(ctx, queue, "g", t0.Add(1e9))
	require.ErrorContains(t, err, "12 writes")
	got, err := store.Hold(ctx, queue, "g")
	require.NoError(t, err)
	require.Equal(t, before, got, "nothing written")
	refuse(11)
	h, err := store.BeginRedrive(ctx, queue, "g", t0.Add(2e9))
	require.NoError(t, err, "the 12th write lands")
	require.Equal(t, int64(1), h.Epoch)
	var left int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT n FROM refusals`).Scan(&left))
	require.Zero(t, left, "each refusal was a write sent")

	// Failed, its own loop: the same bound.
	f := quarantine.Failure{Sequence: seqKey(t, "1"), Cause: "again", Seen: h.Attempts, SeenHeld: true}
	refuse(12)
	_, err = store.Failed(ctx, queue, "g", f, t0.Add(3e9))
	require.ErrorContains(t, err, "12 writes")
	refuse(11)
	a, err := store.Failed(ctx, queue, "g", f, t0.Add(4e9))
	require.NoError(t, err, "the 12th write lands")
	require.Equal(t, int64(1), a.Failed)
}
