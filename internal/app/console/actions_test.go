package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// A redrive from the group's page: the buttons, the confirmation that
// says what will happen, the report, and the group page's new state.
func TestARedriveFromTheConsoleRedrivesTheGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.hold(t, "g", 2)
	page := b.get(t, "/quarantine/commands/g", http.StatusOK)
	require.Contains(t, page, `<a class="button" href="/quarantine/commands/g/redrive" data-testid="redrive-button">`)
	require.Contains(t, page, `data-testid="discard-button"`)
	require.Equal(t, 2, strings.Count(page, `data-testid="discard-one-button"`))

	confirm := b.get(t, "/quarantine/commands/g/redrive", http.StatusOK)
	require.Contains(t, testid(t, confirm, "confirm-text"), "Redrive group g on commands: begin epoch 1 of its hold (now held, 2 parked)")
	require.Contains(t, confirm, `<form method="post" action="/quarantine/commands/g/redrive"`)

	report := b.postSeeOther(t, "/quarantine/commands/g/redrive", formOf(t, b, "/quarantine/commands/g/redrive"))
	require.Contains(t, report, `data-testid="report" data-state="draining"`)
	require.Contains(t, report, "2 sent under epoch 1; now draining, 2 parked.")
	require.Len(t, b.sends.Inputs, 2, "the two copies were sent, in order")
	require.Equal(t, `{"job_id":"g","n":1}`, aws.ToString(b.sends.Inputs[0].MessageBody))
	require.Equal(t, `{"job_id":"g","n":2}`, aws.ToString(b.sends.Inputs[1].MessageBody))

	h, err := b.holds.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, quarantine.StateDraining, h.State)
	require.Equal(t, int64(1), h.Epoch)
	page = b.get(t, "/quarantine/commands/g", http.StatusOK)
	require.Equal(t, "draining", testid(t, page, "hold-state"))
	require.Equal(t, "1", testid(t, page, "hold-epoch"))
}

// A redrive whose group has nothing parked any more is released at once;
// the group's page then says released, without buttons.
func TestARedriveOfAGroupThatIsNotHeldIsTheOperatorsError(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.hold(t, "g", 1)
	form := formOf(t, b, "/quarantine/commands/g/redrive")
	ng := form
	page := b.post(t, "/quarantine/commands/other/redrive", ng, http.StatusForbidden) // its form is g's
	require.Contains(t, page, "CSRF")
	// Discard g's only message: released; a redrive then finds no hold.
	d := formOf(t, b, "/quarantine/commands/g/discard")
	d.Set("group_id", "g")
	b.postSeeOther(t, "/quarantine/commands/g/discard", d)
	page = b.post(t, "/quarantine/commands/g/redrive", form, http.StatusNotFound)
	require.Contains(t, testid(t, page, "error-message"), "is not held on commands")
	page = b.get(t, "/quarantine/commands/g", http.StatusOK)
	require.Equal(t, "released", testid(t, page, "hold-state"))
	require.NotContains(t, page, "redrive-button")
}

// A discard of one message, then of the rest: each archived, then gone.
func TestADiscardFromTheConsoleArchivesAndDrops(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.hold(t, "g", 3)

	confirm := b.get(t, "/quarantine/commands/g/discard?seq=1002", http.StatusOK)
	require.Contains(t, testid(t, confirm, "confirm-text"), "Discard parked message 1002 of group g on commands")
	require.Contains(t, confirm, `data-testid="confirm-group"`)
	form := formOf(t, b, "/quarantine/commands/g/discard?seq=1002")
	require.Equal(t, "1002", form.Get("seq"))
	form.Set("group_id", "g")
	report := b.postSeeOther(t, "/quarantine/commands/g/discard", form)
	require.Contains(t, report, "1 discarded; now held, 2 parked.")
	key := quarantine.ArchiveKey("unit.fifo", "g", "0000000000000000000000000000000000001002")
	require.Contains(t, report, "Archived under "+key)
	archived := b.object(t, key)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(archived), &doc))
	require.Equal(t, `{"job_id":"g","n":2}`, doc["Body"])

	page := b.get(t, "/quarantine/commands/g", http.StatusOK)
	seqs := regexp.MustCompile(`data-testid="parked-row" data-seq="(\d+)"`).FindAllStringSubmatch(page, -1)
	require.Len(t, seqs, 2)
	require.Equal(t, "1001", seqs[0][1])
	require.Equal(t, "1003", seqs[1][1])

	// Discarding the same message again: it is not parked any more.
	page = b.post(t, "/quarantine/commands/g/discard", form, http.StatusNotFound)
	require.Contains(t, page, "has no parked message 1002")

	all := formOf(t, b, "/quarantine/commands/g/discard")
	all.Set("group_id", " g ") // as the CLI, the typed id is trimmed
	report = b.postSeeOther(t, "/quarantine/commands/g/discard", all)
	require.Contains(t, report, "2 discarded; now released, 0 parked.")
	require.Contains(t, report, `data-state="released"`)
	page = b.get(t, "/quarantine/commands/g", http.StatusOK)
	require.Equal(t, "released", testid(t, page, "hold-state"))
	require.Contains(t, page, `data-testid="parked-empty"`)
}

// A draining group's messages cannot be discarded: the operator's
// conflict, 409.
func TestADiscardWhileDrainingIsAConflict(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) { c.AllowActions = true })
	b.hold(t, "g", 1)
	b.postSeeOther(t, "/quarantine/commands/g/redrive", formOf(t, b, "/quarantine/commands/g/redrive"))
	// A form of epoch 1, from a console of the same token whose group is
	// held again under it.
	other := setup(t, func(c *console.Config) { c.AllowActions = true })
	other.hold(t, "g", 1)
	other.postSeeOther(t, "/quarantine/commands/g/redrive", formOf(t, other, "/quarantine/commands/g/redrive"))
	other.hold(t, "g", 1)
	form := formOf(t, other, "/quarantine/commands/g/discard")
	require.Equal(t, "1", form.Get("epoch"))
	form.Set("group_id", "g")
	page := b.post(t, "/quarantine/commands/g/discard", form, http.StatusConflict)
	require.Contains(t, page, "is draining under epoch 1")
	h, err := b.holds.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, int64(1), h.Parked, "nothing discarded")
}

func (b *testBundle) object(t *testing.T, key string) string {
	t.Helper()
	out, err := b.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String(key)})
	require.NoError(t, err)
	defer func() { _ = out.Body.Close() }()
	body, err := io.ReadAll(out.Body)
	require.NoError(t, err)
	return string(body)
}
