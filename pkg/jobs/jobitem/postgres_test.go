package jobitem_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// completed is a job with every attribute set.
func completed() jobitem.Job {
	return jobitem.Job{
		ID: "job-42", IntentID: "export-intent-7", Tenant: "t-1", Status: jobitem.StatusCompleted,
		Generation: 2, Version: 5, LeaseOwner: "attempt-b",
		LeaseExpiresAt: time.UnixMilli(1_793_782_800_123).UTC(),
		Result:         jobitem.Result{Key: "candidates/job-42/g0000000002/attempt-b.json", SHA256: strings.Repeat("ab", 32), Size: 1234},
		Progress:       120,
		Outbox: jobitem.Message{ID: "job-42/v5", Type: jobitem.EventCompleted, Version: 5,
			Payload: map[string]string{jobitem.PayloadAttemptID: "attempt-b"}},
		Spec:      map[string]string{"source": "articles"},
		Error:     jobitem.Failure{Code: "x", Message: ""},
		CreatedAt: time.UnixMilli(1_793_782_000_001).UTC(),
		UpdatedAt: time.UnixMilli(1_793_782_900_002).UTC(),
		ExpiresAt: time.Unix(1_796_374_900, 0).UTC(),
		History: []jobitem.Transition{ // cut short: it begins after creation
			{Version: 4, Status: jobitem.StatusRunning, Generation: 2, At: time.UnixMilli(1_793_782_800_001).UTC(), Event: jobitem.EventStarted},
			{Version: 5, Status: jobitem.StatusCompleted, Generation: 2, At: time.UnixMilli(1_793_782_900_002).UTC(), Event: jobitem.EventCompleted},
		},
	}
}

// A job survives EncodePostgresImage and FromPostgresImage, every
// attribute set or none of the optional ones.
func TestAPostgresImageRoundTrips(t *testing.T) {
	t.Parallel()
	pending := jobitem.Job{ID: "job-43", IntentID: "i", Tenant: "t-1", Status: jobitem.StatusPending,
		Outbox:    jobitem.Message{ID: "job-43/v0", Type: jobitem.MessageRun},
		CreatedAt: time.UnixMilli(1).UTC(), UpdatedAt: time.UnixMilli(1).UTC()}
	for _, j := range []jobitem.Job{completed(), pending} {
		b, err := jobitem.EncodePostgresImage(j)
		require.NoError(t, err)
		back, err := jobitem.FromPostgresImage(b)
		require.NoError(t, err)
		require.Equal(t, j, back)
	}
	_, err := jobitem.EncodePostgresImage(jobitem.Job{ID: "intent#t-1#x"})
	require.ErrorIs(t, err, jobitem.ErrInvalid)
}

// A row as to_jsonb renders it: NULL columns are null and read as absent;
// columns the decoder does not read (finished_key) are ignored.
func TestAPostgresRowImageDecodes(t *testing.T) {
	t.Parallel()
	row := `{"job_id": "job-42", "intent_id": "i", "tenant": "t-1", "status": "running", "generation": 1, "version": 1,
		"lease_owner": "attempt-a", "lease_expires_at": 1793782860000, "result_key": null, "result_sha256": null,
		"result_size": null, "progress": 0, "outbox": {"id": "job-42/v1", "type": "job.started", "version": 1,
		"payload": {"attempt_id": "attempt-a"}}, "spec": null, "error": null, "created_at": 1793782800000,
		"updated_at": 1793782800000, "expires_at": null, "finished_key": null, "history": {"h1": "smw1vyqo01.1"}}`
	j, err := jobitem.FromPostgresImage([]byte(row))
	require.NoError(t, err)
	require.Equal(t, jobitem.Job{ID: "job-42", IntentID: "i", Tenant: "t-1", Status: jobitem.StatusRunning,
		Generation: 1, Version: 1, LeaseOwner: "attempt-a", LeaseExpiresAt: time.UnixMilli(1793782860000).UTC(),
		Outbox: jobitem.Message{ID: "job-42/v1", Type: jobitem.EventStarted, Version: 1,
			Payload: map[string]string{jobitem.PayloadAttemptID: "attempt-a"}},
		CreatedAt: time.UnixMilli(1793782800000).UTC(), UpdatedAt: time.UnixMilli(1793782800000).UTC(),
		History: []jobitem.Transition{{Version: 1, Status: jobitem.StatusRunning, Generation: 1,
			At: time.UnixMilli(1793782800000).UTC(), Event: jobitem.EventStarted}}}, j)
}

// Each malformed image is an error saying what is wrong, never ErrNotJob
// but for no image at all.
func TestAMalformedPostgresImageIsAnError(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "  ", "null"} {
		_, err := jobitem.FromPostgresImage([]byte(in))
		require.ErrorIs(t, err, jobitem.ErrNotJob, "%q", in)
	}
	for in, want := range map[string]string{
		`[]`:                          "jobs: image: want a JSON object, have JSON array",
		`"job-42"`:                    "jobs: image: want a JSON object, have S",
		`{}`:                          "jobs: image: an object without attributes",
		`{"job_id": null}`:            "jobs: image: an object without attributes",
		`{"job_id":"j"} {}`:           "jobs: image: data after the JSON value",
		`{"job_id":"j"`:               "jobs: image: unexpected EOF",
		`{"job_id":"j"}`:              "jobs: attribute status: missing",
		`{"status":"pending"}`:        "jobs: attribute job_id: missing",
		`{"job_id":1,"status":"x"}`:   "jobs: attribute job_id: want S, have N 1",
		`{"job_id":"j","status":"x"}`: `jobs: job "j": attribute status: unknown status "x"`,
		`{"job_id":"j","status":"pending","version":1.5}`:                 "jobs: attribute version: want an integer N, have N 1.5",
		`{"job_id":"j","status":"pending","version":1e3}`:                 "jobs: attribute version: want an integer N, have N 1e3",
		`{"job_id":"j","status":"pending","version":"1"}`:                 "jobs: attribute version: want N, have S",
		`{"job_id":"j","status":"pending","version":true}`:                "jobs: attribute version: want N, have JSON boolean",
		`{"job_id":"j","status":"pending","version":9223372036854775808}`: "jobs: attribute version: want an integer N, have N 9223372036854775808",
		`{"job_id":"j","status":"pending","spec":{"a":1}}`:                "jobs: attribute spec.a: want S, have N 1",
		`{"job_id":"j","status":"pending","spec":{"a":null}}`:             "jobs: attribute spec.a: want S, have JSON null",
		`{"job_id":"j","status":"pending","outbox":[1]}`:                  "jobs: attribute outbox: want M, have JSON array",
		`{"job_id":"","status":"pending"}`:                                "jobs: attribute job_id: empty",
		`{"job_id":"intent#t#i","tenant":"t"}`:                            `jobs: item "intent#t#i": not a job item`,
	} {
		_, err := jobitem.FromPostgresImage([]byte(in))
		require.EqualError(t, err, want, in)
		if !strings.Contains(in, "intent#") {
			require.False(t, errors.Is(err, jobitem.ErrNotJob), in)
		}
	}
}

// FuzzFromPostgresImage: any input decodes without a panic; an error
// names the package; a job decoded has an id and a known status and
// survives EncodePostgresImage when its id is valid.
func FuzzFromPostgresImage(f *testing.F) {
	b, err := jobitem.EncodePostgresImage(completed())
	require.NoError(f, err)
	for _, s := range []string{string(b), `{"job_id":"j","status":"pending"}`, `null`, `{"job_id":"j","status":"running","outbox":{"payload":{"a":"b"}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := jobitem.FromPostgresImage(data)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "jobs: "), "an error names the package: %v", err)
			return
		}
		require.NotEmpty(t, j.ID)
		require.Contains(t, []jobitem.Status{jobitem.StatusPending, jobitem.StatusRunning, jobitem.StatusCompleted,
			jobitem.StatusFailed, jobitem.StatusCancelled}, j.Status)
		if jobitem.ValidateID(j.ID) != nil {
			return
		}
		again, err := jobitem.EncodePostgresImage(j)
		require.NoError(t, err)
		back, err := jobitem.FromPostgresImage(again)
		require.NoError(t, err)
		require.Equal(t, j, back)
		var m map[string]any
		require.NoError(t, json.Unmarshal(again, &m))
	})
}
