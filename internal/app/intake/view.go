package intake

import (
	"time"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// timeFormat is RFC 3339 in UTC with the store's millisecond precision.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// CreatedView is the body of a POST /jobs answer (202 for a new job, 200
// for the job the key already created).
type CreatedView struct {
	JobID    string `json:"job_id"`
	Status   string `json:"status"`
	Location string `json:"location"` // also the Location header
}

// JobView is the body of GET and DELETE /jobs/{id}.
//
// A failed or cancelled job says why under "failure", not "error": "error"
// is reserved for the error body, so a client can tell an error answer from
// a job view by that one field.
type JobView struct {
	JobID      string       `json:"job_id"`
	Status     string       `json:"status"`
	Generation int64        `json:"generation"`
	Version    int64        `json:"version"`
	Progress   int64        `json:"progress"`
	CreatedAt  string       `json:"created_at"`
	UpdatedAt  string       `json:"updated_at"`
	Failure    *FailureView `json:"failure,omitempty"` // failed or cancelled
	Result     *ResultView  `json:"result,omitempty"`  // completed
}

// FailureView says why a job failed or was cancelled.
type FailureView struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// ResultView is a completed job's accepted result and a short-lived URL to
// download it.
type ResultView struct {
	Key          string `json:"key"`
	Size         int64  `json:"size"`
	SHA256       string `json:"sha256"`
	URL          string `json:"url"`
	URLExpiresAt string `json:"url_expires_at"`
}

func location(id string) string { return "/jobs/" + id }

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeFormat)
}

// jobView is the view of j without its download URL.
func jobView(j *jobs.Job) JobView {
	v := JobView{
		JobID:      j.ID,
		Status:     string(j.Status),
		Generation: j.Generation,
		Version:    j.Version,
		Progress:   j.Progress,
		CreatedAt:  formatTime(j.CreatedAt),
		UpdatedAt:  formatTime(j.UpdatedAt),
	}
	if (j.Status == jobs.StatusFailed || j.Status == jobs.StatusCancelled) && j.Error.Code != "" {
		v.Failure = &FailureView{Code: j.Error.Code, Message: j.Error.Message}
	}
	if j.Status == jobs.StatusCompleted {
		v.Result = &ResultView{Key: j.Result.Key, Size: j.Result.Size, SHA256: j.Result.SHA256}
	}
	return v
}
