package console_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
)

// park parks message n of group g (sequence number 1000+n) on the hold.
func (b *testBundle) park(t testing.TB, g string, n int) {
	t.Helper()
	_, err := b.q.Park(t.Context(), g, []*events.SQSMessage{sqsMsg(g, n, fmt.Sprintf(`{"n":%d}`, n))}, errors.New("boom"), true)
	require.NoError(t, err)
}

// parkedCount is how many messages group g has parked now.
func (b *testBundle) parkedCount(t testing.TB, g string) int64 {
	t.Helper()
	h, err := b.holds.Hold(t.Context(), "unit.fifo", g)
	require.NoError(t, err)
	return h.Parked
}

// discardForm is the form of target's discard confirmation, the group id
// typed.
func discardForm(t testing.TB, b *testBundle, target, g string) url.Values {
	t.Helper()
	form := formOf(t, b, target)
	form.Set("group_id", g)
	return form
}

// refusedAsStale posts a stale form to target: 409, saying to reload.
func (b *testBundle) refusedAsStale(t testing.TB, target string, form url.Values) {
	t.Helper()
	page := b.post(t, target, form, http.StatusConflict)
	require.Contains(t, testid(t, page, "error-message"), "the group changed since this page was shown: reload")
}

// heldWithActions is a console with actions allowed whose group g holds n
// parked messages.
func heldWithActions(t testing.TB, n int) *testBundle {
	t.Helper()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.hold(t, "g", n)
	return b
}

// A discard-all form discards what its page said it would: a message
// parked since the page was shown (parking while held keeps the epoch)
// makes it stale (409), and nothing is discarded.
func TestADiscardAllFormIsStaleOnceAMessageIsParked(t *testing.T) {
	t.Parallel()
	b := heldWithActions(t, 2)
	require.Contains(t, testid(t, b.get(t, "/quarantine/commands/g/discard", http.StatusOK), "confirm-text"), "every parked message of group g (2)")
	form := discardForm(t, b, "/quarantine/commands/g/discard", "g")
	b.park(t, "g", 3)
	require.Equal(t, int64(3), b.parkedCount(t, "g"))

	b.refusedAsStale(t, "/quarantine/commands/g/discard", form)
	require.Equal(t, int64(3), b.parkedCount(t, "g"), "nothing discarded")

	// What it binds is in the MAC: a form whose count is edited is forged.
	form.Set("parked", "3")
	b.post(t, "/quarantine/commands/g/discard", form, http.StatusForbidden)
	require.Equal(t, int64(3), b.parkedCount(t, "g"))
}

// A discard-all form shown before the group was released and held again
// (same epoch, same count) is stale: it names the hold's last parked
// message, which the new hold's is not.
func TestADiscardAllFormOfAnEarlierHoldIsStale(t *testing.T) {
	t.Parallel()
	b := heldWithActions(t, 2)
	old := discardForm(t, b, "/quarantine/commands/g/discard", "g")
	b.postSeeOther(t, "/quarantine/commands/g/discard", discardForm(t, b, "/quarantine/commands/g/discard", "g")) // released
	b.park(t, "g", 3)
	b.park(t, "g", 4)
	h, err := b.holds.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, old.Get("epoch"), fmt.Sprint(h.Epoch), "the same epoch")
	require.Equal(t, int64(2), h.Parked, "the same count")

	b.refusedAsStale(t, "/quarantine/commands/g/discard", old)
	require.Equal(t, int64(2), b.parkedCount(t, "g"), "nothing discarded")
}
