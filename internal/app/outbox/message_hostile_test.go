package outbox_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
)

// A body the decoders accept must be one the stores accept: a tenant or a
// count the job store or the projection's store refuses (jobs.ErrInvalid,
// projection.ErrInvalid) would be refused on every receive, as a failure
// that might pass, until the quarantine's threshold parks it. The decoders
// refuse it at once, for good.
func TestDecodersRefuseWhatTheStoresRefuse(t *testing.T) {
	t.Parallel()
	// (Invalid UTF-8 cannot arrive: encoding/json decodes it as U+FFFD.)
	tenants := map[string]string{
		"257 bytes":         strings.Repeat("t", 257),
		"control character": "t-\n1",
	}
	command := func(tenant string) string {
		b, _ := json.Marshal(map[string]any{"type": "job.run", "command_id": "job-42/v0", "job_id": "job-42", "intent_id": "i",
			"tenant": tenant, "version": 0, "issued_at": "2026-11-04T09:00:00Z"})
		return string(b)
	}
	event := func(mut func(map[string]any)) string {
		m := map[string]any{"type": "job.progress", "event_id": "job-42/v2", "job_id": "job-42", "tenant": "t-1",
			"version": 2, "generation": 1, "status": "running", "progress": 10, "delta": 10, "occurred_at": "2026-11-04T09:00:00Z"}
		mut(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	_, err := outbox.DecodeCommand(command(strings.Repeat("t", 256)))
	require.NoError(t, err, "256 bytes is the limit")
	_, err = outbox.DecodeCommand(command("tenant with spaces, ünïcode and #"))
	require.NoError(t, err)
	for name, tenant := range tenants {
		_, err := outbox.DecodeCommand(command(tenant))
		require.ErrorIs(t, err, outbox.ErrMalformed, name)
		require.ErrorContains(t, err, "a tenant is 1 to 256 bytes", name)
		_, err = outbox.DecodeEvent(event(func(m map[string]any) { m["tenant"] = tenant }))
		require.ErrorIs(t, err, outbox.ErrMalformed, name)
		require.ErrorContains(t, err, "a tenant is 1 to 256 bytes", name)
	}
	for _, field := range []string{"generation", "result_size"} {
		_, err := outbox.DecodeEvent(event(func(m map[string]any) { m[field] = -1 }))
		require.ErrorIs(t, err, outbox.ErrMalformed, field)
		require.ErrorContains(t, err, "negative generation or result size", field)
	}
}
