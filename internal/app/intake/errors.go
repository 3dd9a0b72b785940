package intake

import (
	"errors"
	"fmt"
	"net/http"
)

// Error codes: the "code" of the error body. Clients branch on the code;
// the message is for people and may change.
const (
	CodeUnauthorized          = "unauthorized"            // 401: no JWT authorizer context, or no valid tenant claim
	CodeRouteNotFound         = "route_not_found"         // 404: no such path
	CodeJobNotFound           = "job_not_found"           // 404: no such job, or another tenant's
	CodeMethodNotAllowed      = "method_not_allowed"      // 405: see the Allow header
	CodePayloadTooLarge       = "payload_too_large"       // 413: body over MaxBodyBytes
	CodeUnsupportedMediaType  = "unsupported_media_type"  // 415: Content-Type is not application/json
	CodeInvalidBody           = "invalid_body"            // 400: not one JSON object of the documented shape
	CodeInvalidSpec           = "invalid_spec"            // 400: the spec breaks a limit (keys, key syntax, value size), or the task cannot run it
	CodeUnknownTask           = "unknown_task"            // 400: the spec names a task the service does not run (spec "task")
	CodeMissingIdempotencyKey = "missing_idempotency_key" // 400
	CodeInvalidIdempotencyKey = "invalid_idempotency_key" // 400: longer than 512 bytes, or not printable UTF-8
	CodeInvalidJobID          = "invalid_job_id"          // 400: not [A-Za-z0-9_-]{1,128}
	CodeIntentConflict        = "intent_conflict"         // 409: the key already created a job with another spec
	CodeJobFinal              = "job_final"               // 409: the job already ended; "status" says how
	CodeInternal              = "internal"                // 500: details only in the log
	CodeUnavailable           = "unavailable"             // 503: the database throttled the request, retries included; see Retry-After
)

// RetryAfterSeconds is the Retry-After of a 503.
const RetryAfterSeconds = "1"

// ErrorBody is the body of every 4xx and 5xx answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the machine-readable code and a human message. Status is
// set only with CodeJobFinal: the status the job ended in.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status,omitempty"`
}

// apiError is an answer that is not a success. It never carries the detail
// of an internal failure: that goes to the log (cause), not to the client.
type apiError struct {
	status int
	detail ErrorDetail
	allow  string // the Allow header of a 405
	cause  error  // logged for 5xx
}

func (e *apiError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%d %s: %v", e.status, e.detail.Code, e.cause)
	}
	return fmt.Sprintf("%d %s: %s", e.status, e.detail.Code, e.detail.Message)
}

func fail(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, detail: ErrorDetail{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// internal hides cause from the client. A cause that is the database
// throttling the request (after the SDK's own retries) is a 503 with
// Retry-After instead: the client should come back, not report a bug.
func internal(cause error) *apiError {
	if throttled(cause) {
		return &apiError{
			status: http.StatusServiceUnavailable,
			detail: ErrorDetail{Code: CodeUnavailable, Message: "the service is busy; retry after a moment"},
			cause:  cause,
		}
	}
	return &apiError{
		status: http.StatusInternalServerError,
		detail: ErrorDetail{Code: CodeInternal, Message: "internal error; the request may be retried"},
		cause:  cause,
	}
}

// throttlingCodes are the error codes AWS answers a throttled request
// with (DynamoDB's, and the generic ones).
var throttlingCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"Throttling":                             true,
	"TooManyRequestsException":               true,
}

// throttled reports whether err is, or wraps, an API error whose code says
// the request was throttled. (A DynamoDB transaction cancelled because an
// item was throttled carries the code in its cancellation reasons only,
// and stays a 500.)
func throttled(err error) bool {
	var api interface{ ErrorCode() string }
	return errors.As(err, &api) && throttlingCodes[api.ErrorCode()]
}

// jobNotFound is the one answer for a missing job and another tenant's, so
// the answer reveals nothing about jobs the caller does not own.
func jobNotFound(id string) *apiError {
	return fail(http.StatusNotFound, CodeJobNotFound, "job %s not found", id)
}
