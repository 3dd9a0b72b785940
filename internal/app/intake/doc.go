// Package intake is the jobs API: the logic of the intake function behind
// API Gateway's HTTP API (payload format 2.0). It creates a job per client
// intent, shows a job to its tenant (with a short-lived download URL once
// it has completed), and cancels it.
//
//	POST   /jobs       Idempotency-Key: <intent id>   {"spec": {"page_size": "50"}}
//	                   → 202 {"job_id", "status", "location"} and a Location header,
//	                     200 with the same job when the key is used again with the same spec,
//	                     409 intent_conflict when it is used again with another spec,
//	                     400 invalid_spec when the task cannot run the spec,
//	                     400 unknown_task when the spec names no task the service runs
//	GET    /jobs/{id}  → 200 the job; when completed, its result and a presigned GET URL
//	HEAD   /jobs/{id}  → GET's status and headers, without a body
//	DELETE /jobs/{id}  → 200 the cancelled job, or 409 job_final with the status it ended in
//
// # An intent whose job has expired
//
// A job's item expires (TTL) 30 days after the job ended, the intent's
// marker 30 days after it was created, and DynamoDB deletes expired items
// days later, in any order, returning them to reads until then (see
// package jobs). The job's item decides what a retried POST gets: while it
// is there, expired or not, the retry is answered 200 with that job, as
// GET shows it; once it is gone (GET answers 404 job_not_found), the retry
// creates a new job with the spec it carries and is answered 202, whether
// the marker is still there or not. While the marker is there the new job
// gets a new id (jobs.SuccessorJobID), not the expired job's; once both
// items are gone it gets the derived id again (package jobs states what
// that does to the totals). So the answer never depends on the
// order of the two deletions, and the same request never gets an error
// now and a new job later: an expired intent is no error (no 410), just an
// intent that is free again. A client that must not run an intent twice
// keeps its keys unique for longer than that.
//
// # Identity
//
// The caller is authenticated by a JWT authorizer on the HTTP API, and the
// tenant is a claim of the token it verified
// (RequestContext.Authorizer.JWT.Claims[Config.TenantClaim]). The callers
// are a SaaS team's users, and they already carry OIDC/JWT tokens from
// Cognito or the team's identity provider; API Gateway checks the token's
// signature, issuer, audience and expiry before the function runs, at no
// cost in code here, and a request it rejects never reaches the function.
// IAM authorization suits service-to-service calls signed with AWS
// credentials, not end users in a browser or a CLI. A tenant claim is
// printable UTF-8 of 1 to 256 bytes without '#' (the job store's rule),
// else the answer is 401.
//
// There is no other identity path: no header, no body field, no
// environment flag, no fallback tenant. A request without a JWT
// authorizer context is a 401, whatever it carries. A local identity for
// development belongs only in the CLI's local server (`fifoworker local
// serve`: internal/dev/pipeline's HTTPAPI and Identity), which has no API
// Gateway in front of it and must build the authorizer context itself;
// never in this package or the Lambda build (internal/dev/pipeline's
// TestTheLambdaBuildCannotReachTheLocalIdentity).
//
// Invariants:
//   - The tenant of a job is the verified caller's, never anything the
//     request says; a job is created for (tenant, Idempotency-Key), so two
//     tenants using the same key get two jobs.
//   - Another tenant's job is answered exactly like a missing one: the same
//     404 status, code and message, and nothing else is done with it (no
//     cancel, no URL). The answer never reveals that a job exists.
//   - A refused request writes nothing: every check precedes the one write
//     of a request (Create or Cancel), and the write is the store's atomic
//     decision.
//   - DELETE of a job that is already final answers 409 job_final; a job
//     cancelled by someone else between DELETE's read and its cancel
//     answers 200 with the cancelled job (the store's cancel is not
//     jobs.CancelRequest.Strict): the client asked for a cancelled job and
//     has one, and a retried DELETE stays harmless. Only the operator's
//     jobs cancel, which must say whether it cancelled the job itself,
//     asks for a strict cancel.
//   - Every answer is JSON with Content-Type application/json. Every 4xx and
//     5xx has one shape, ErrorBody: {"error": {"code": "...", "message":
//     "..."}} (plus "status" with job_final), with one of the Code*
//     constants. A job view says why a job failed under "failure", so
//     "error" at the top level means an error answer and nothing else.
//   - An internal error (a store or signing failure, a panic) is answered
//     500 with a generic message; its detail goes to the log only. A store
//     the database throttled (a throttling error code after the SDK's
//     retries) is answered 503 "unavailable" with Retry-After. Handle
//     never returns an error, so API Gateway never substitutes its own body.
//   - A result URL is valid for Config.ResultURLTTL (5 minutes by default,
//     at most an hour) and only for the accepted result: S3Presigner pins
//     it to the version of the key whose S3-verified SHA-256 and size are
//     the job item's, and signs none when the key's current version is not
//     that (500). Answers carry Cache-Control: no-store.
//
// # Checks, in order
//
// Identity (401); route (404 route_not_found) and method (405 with an Allow
// header); then for POST: Content-Type application/json, with parameters,
// charset UTF-8 if any (415); a base64-encoded body is decoded, and a body
// over 16 KiB is refused (413); Idempotency-Key present (400
// missing_idempotency_key) and 1 to 512 bytes of printable UTF-8 (400
// invalid_idempotency_key); the body is one JSON object with at most the
// field "spec", an object of string values, with no repeated name, no
// trailing data and valid UTF-8 (400 invalid_body); the spec has at most 32
// keys of [a-z0-9_]{1,64} and values of at most 1024 bytes (400
// invalid_spec); then a task can run it, by the check of the task the spec
// names (Config.ValidateSpec, given the tasks' spec checks by the wiring:
// the spec's "task" names a task the service runs, 400 unknown_task; that
// task accepts the spec, 400 invalid_spec, the message naming the field).
// A spec the check refuses is first looked up as a replay: the same key
// and spec that created the tenant's job before the check changed (a
// "task" of the client's own, from before that key named the job's task)
// is answered 200 with that job, as every replay is, and writes nothing.
// For GET, HEAD and DELETE: the id is [A-Za-z0-9_-]{1,128} (400
// invalid_job_id), then the job exists and is the caller's (404
// job_not_found). A HEAD request is answered as GET would be, status and
// headers alike, with no body, errors included; an Allow header that lists
// GET lists HEAD.
//
// # Deployment
//
// The handler routes on RequestContext.HTTP.Method and RawPath itself
// (not on the route key), so that unknown paths and wrong methods get the
// same error shape as everything else. That needs API Gateway to send them
// to the function: routes "ANY /jobs", "ANY /jobs/{id}" and "$default", all
// behind the JWT authorizer. With routes per method, API Gateway answers an
// unknown route or method itself: 404 {"message":"Not Found"}. The API is
// served on its "$default" stage, whose paths carry no stage prefix; under
// a named stage RawPath starts with the stage's name and matches no route.
package intake
