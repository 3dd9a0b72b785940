package console_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
)

// An action that cannot work here is not offered: its button is replaced
// by a line saying why, and its confirmation and its POST are refused
// with that reason; the other action is still offered.
func TestAnActionThatCannotWorkIsNotOffered(t *testing.T) {
	t.Parallel()
	const noDiscard, noRedrive = "discard archives what it drops: set FIFOWORKER_CANDIDATES_BUCKET_NAME", "a redrive on Kafka produces its copies: set KAFKA_BOOTSTRAP_SERVERS"
	for _, c := range []struct {
		name, reason, gone, kept, action string
		change                           func(*console.Queue)
	}{
		{"no bucket", noDiscard, "discard-button", "redrive-button", "discard", func(q *console.Queue) { q.NoDiscard = noDiscard }},
		{"no brokers", noRedrive, "redrive-button", "discard-button", "redrive", func(q *console.Queue) { q.NoRedrive = noRedrive }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(cfg *console.Config) { cfg.AllowActions = true; c.change(&cfg.Queues[0]) })
			b.hold(t, "g", 1)
			// The form of a console that can (the same token) is refused here.
			able := setup(t, func(cfg *console.Config) { cfg.AllowActions = true })
			able.hold(t, "g", 1)
			form := formOf(t, able, "/quarantine/commands/g/"+c.action)
			form.Set("group_id", "g")

			page := b.get(t, "/quarantine/commands/g", http.StatusOK)
			require.NotContains(t, page, `data-testid="`+c.gone+`"`)
			require.Contains(t, page, `data-testid="`+c.kept+`"`)
			require.Contains(t, testid(t, page, "no-"+c.action), c.reason)
			require.Contains(t, testid(t, b.get(t, "/quarantine/commands/g/"+c.action, http.StatusForbidden), "error-message"), c.reason)
			require.Contains(t, testid(t, b.post(t, "/quarantine/commands/g/"+c.action, form, http.StatusForbidden), "error-message"), c.reason)
			h, err := b.holds.Hold(t.Context(), "unit.fifo", "g")
			require.NoError(t, err)
			require.Equal(t, int64(1), h.Parked)
			require.Zero(t, h.Epoch)
			require.Empty(t, b.sends.Inputs)
		})
	}
}

// A draining group's messages cannot be discarded (the operator refuses,
// 409): its page offers no discard, saying why, and the confirmation is
// refused the same way.
func TestADrainingGroupOffersNoDiscard(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.hold(t, "g", 2)
	b.postSeeOther(t, "/quarantine/commands/g/redrive", formOf(t, b, "/quarantine/commands/g/redrive"))
	page := b.get(t, "/quarantine/commands/g", http.StatusOK)
	require.Equal(t, "draining", testid(t, page, "hold-state"))
	require.NotContains(t, page, `data-testid="discard-button"`)
	require.NotContains(t, page, `data-testid="discard-one-button"`)
	require.Contains(t, page, `data-testid="redrive-button"`, "a redrive may take over")
	require.Contains(t, testid(t, page, "no-discard"), "is draining under epoch 1")
	for _, target := range []string{"/quarantine/commands/g/discard", "/quarantine/commands/g/discard?seq=1001"} {
		require.Contains(t, testid(t, b.get(t, target, http.StatusConflict), "error-message"), "is draining under epoch 1")
	}
}
