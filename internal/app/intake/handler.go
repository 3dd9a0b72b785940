package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// Defaults and bounds of Config.
const (
	// DefaultTenantClaim is the JWT claim that names the caller's tenant.
	// With Cognito user pools it is typically "custom:tenant".
	DefaultTenantClaim = "tenant"
	// DefaultResultURLTTL is how long a result's download URL is valid.
	DefaultResultURLTTL = 5 * time.Minute
	// MinResultURLTTL and MaxResultURLTTL bound Config.ResultURLTTL. The URL
	// is a bearer credential for the result: it should not outlive the
	// moment the client asked for it by much.
	MinResultURLTTL = time.Second
	MaxResultURLTTL = time.Hour
)

// cancelReason is recorded as the failure message of a job cancelled here.
const cancelReason = "cancelled by the client (DELETE /jobs/{id})"

// Config configures a Handler. Store and Presigner are required; every
// other field has a default for its zero value.
type Config struct {
	// Store holds the jobs. Required.
	Store jobs.Store
	// Presigner signs the download URL of a completed job's result.
	// Required; NewS3Presigner is the one for S3.
	Presigner Presigner
	// TenantClaim is the claim of the verified JWT that names the caller's
	// tenant. Default DefaultTenantClaim ("tenant").
	TenantClaim string
	// ResultURLTTL is how long a download URL is valid. Default
	// DefaultResultURLTTL (5 minutes); at least MinResultURLTTL and at most
	// MaxResultURLTTL.
	ResultURLTTL time.Duration
	// ValidateSpec is the tasks' check of a spec: a spec within the limits
	// (MaxSpecKeys, MaxSpecKeyBytes, MaxSpecValueBytes) that it refuses is
	// answered 400 with its error's text, which should name the field, and
	// no job is created (unless the request replays one that created a job
	// before, which gets its job): unknown_task when the error wraps
	// task.ErrUnknownTask (the spec names a task nobody runs), invalid_spec
	// otherwise. The wiring hands intake the spec checks of the tasks the
	// worker runs (a task.Checker, which asks the check of the task the
	// spec names and answers as the worker's task.Registry), so that a
	// spec no task can run is refused at once by the very code that would
	// fail its job; intake itself knows no task, and builds none. Default
	// nil: only the limits are checked.
	ValidateSpec func(spec map[string]string) error
	// Logger receives one line per request. Default (nil): nothing is
	// logged, as for every other component (the wiring passes the
	// function's logger).
	Logger *slog.Logger
	// Now is the clock of the URL's expiry time and of the metrics'
	// records. Default time.Now.
	Now func() time.Time
	// FunctionName is the value of the job metrics' dimension
	// (jobs.MetricsDimension): with one, each create that makes a new job
	// (not a replay of an intent's job) logs an EMF record of
	// jobs.MetricCreated through Logger. Default (""): no metrics.
	FunctionName string
}

// ErrInvalidConfig is wrapped by the error a constructor returns for a
// configuration that cannot work; the message names the fields.
var ErrInvalidConfig = errors.New("intake: invalid configuration")

// Validate reports every field of c that cannot work, treating zero fields
// as their defaults, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	var problems []string
	if c.Store == nil {
		problems = append(problems, "Store is nil")
	}
	if c.Presigner == nil {
		problems = append(problems, "Presigner is nil")
	}
	if c.TenantClaim != "" && !printable(c.TenantClaim) {
		problems = append(problems, fmt.Sprintf("TenantClaim %q is not printable UTF-8", c.TenantClaim))
	}
	if c.ResultURLTTL != 0 && (c.ResultURLTTL < MinResultURLTTL || c.ResultURLTTL > MaxResultURLTTL) {
		problems = append(problems, fmt.Sprintf("ResultURLTTL %v is not in [%v, %v]", c.ResultURLTTL, MinResultURLTTL, MaxResultURLTTL))
	}
	return invalidConfig(problems)
}

// invalidConfig is nil without problems, else an error wrapping
// ErrInvalidConfig that names them all.
func invalidConfig(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
}

func (c Config) withDefaults() Config {
	if c.TenantClaim == "" {
		c.TenantClaim = DefaultTenantClaim
	}
	if c.ResultURLTTL == 0 {
		c.ResultURLTTL = DefaultResultURLTTL
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Handler is the jobs API behind API Gateway's HTTP API (payload format
// 2.0). It is safe for concurrent use.
type Handler struct {
	cfg Config
}

// New returns a Handler, or the error of cfg.Validate (wrapping
// ErrInvalidConfig).
func New(cfg Config) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Handler{cfg: cfg.withDefaults()}, nil
}

// answer is what serve decided: a status and a body, or an error.
type answer struct {
	status  int
	body    any
	headers map[string]string
	err     *apiError
}

// trace is what the log line says about a request, filled in as serve
// learns it, so that even a panic's line names the tenant and the job.
type trace struct {
	tenant string
	jobID  string
}

func errAnswer(e *apiError) answer { return answer{status: e.status, err: e} }

// Handle answers one request. It never returns an error: every failure,
// an internal one or a panic included, is answered here in the error
// shape with a generic message and logged with its detail. (An error
// returned to the Lambda runtime would make API Gateway answer its own 500,
// in another shape.)
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, err error) {
	var tr trace
	defer func() {
		if p := recover(); p != nil {
			a := errAnswer(internal(fmt.Errorf("panic: %v\n%s", p, debug.Stack())))
			resp, err = h.finish(ctx, &req, &a, &tr), nil
		}
	}()
	a := h.serve(ctx, &req, &tr)
	return h.finish(ctx, &req, &a, &tr), nil
}

// The routes. An id is one path segment; anything else under /jobs/ is
// not a route.
const (
	collectionPath = "/jobs"
	itemPrefix     = "/jobs/"
)

// The methods of each route, as a 405's Allow header lists them. HEAD is
// answered wherever GET is (RFC 9110, 9.3.2).
const (
	collectionMethods = http.MethodPost
	itemMethods       = http.MethodGet + ", " + http.MethodHead + ", " + http.MethodDelete
)

func (h *Handler) serve(ctx context.Context, req *events.APIGatewayV2HTTPRequest, tr *trace) answer {
	// Identity first: a caller without one learns nothing, not even which
	// paths exist.
	tenant, e := tenantOf(req, h.cfg.TenantClaim)
	if e != nil {
		return errAnswer(e)
	}
	tr.tenant = tenant
	method, path := req.RequestContext.HTTP.Method, req.RawPath
	switch {
	case path == collectionPath:
		if method != http.MethodPost {
			return errAnswer(methodNotAllowed(method, collectionMethods))
		}
		return h.create(ctx, req, tenant, tr)
	case strings.HasPrefix(path, itemPrefix) && len(path) > len(itemPrefix) && !strings.Contains(path[len(itemPrefix):], "/"):
		id := path[len(itemPrefix):]
		tr.jobID = id
		switch method {
		case http.MethodGet, http.MethodHead: // finish drops a HEAD's body
			return h.get(ctx, id, tenant)
		case http.MethodDelete:
			return h.cancel(ctx, id, tenant)
		}
		return errAnswer(methodNotAllowed(method, itemMethods))
	}
	return errAnswer(fail(http.StatusNotFound, CodeRouteNotFound, "no such route; the API has POST /jobs, GET (and HEAD) /jobs/{id} and DELETE /jobs/{id}"))
}

func methodNotAllowed(method, allow string) *apiError {
	e := fail(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method %q is not allowed here; allowed: %s", truncate(method, 32), allow)
	e.allow = allow
	return e
}

// create answers POST /jobs. Every check precedes the one write, so a
// refused request writes nothing.
func (h *Handler) create(ctx context.Context, req *events.APIGatewayV2HTTPRequest, tenant string, tr *trace) answer {
	if e := checkJSON(req); e != nil {
		return errAnswer(e)
	}
	b, e := body(req)
	if e != nil {
		return errAnswer(e)
	}
	key, e := idempotencyKey(req)
	if e != nil {
		return errAnswer(e)
	}
	spec, e := decodeSpec(b)
	if e != nil {
		return errAnswer(e)
	}
	if e := h.runnable(spec); e != nil {
		return h.replayOr(ctx, e, tenant, key, spec, tr)
	}
	res, err := h.cfg.Store.Create(ctx, jobs.CreateRequest{IntentID: key, Tenant: tenant, Spec: spec})
	switch {
	case errors.Is(err, jobs.ErrIntentConflict):
		return errAnswer(fail(http.StatusConflict, CodeIntentConflict,
			"this Idempotency-Key already created a job with another spec; use a new key for a new job"))
	case err != nil:
		return errAnswer(internal(err))
	}
	status := http.StatusAccepted
	if res.Existing {
		status = http.StatusOK
	} else {
		h.logCreated(ctx)
	}
	return created(res.Job, status, tr)
}

// created answers a create with its job.
func created(j jobs.Job, status int, tr *trace) answer {
	tr.jobID = j.ID
	loc := location(j.ID)
	return answer{
		status:  status,
		body:    CreatedView{JobID: j.ID, Status: string(j.Status), Location: loc},
		headers: map[string]string{"Location": loc},
	}
}

// replayOr answers a spec the tasks' check refused (refusal): with its job,
// 200, when the request is a replay of one accepted before the check
// changed (a job created before "task" named the job's task, say), as any
// replay is answered; else with the refusal. The job is looked up where
// Create puts an intent's job, DeriveJobID(tenant, key), and answers only
// if it is the tenant's, of the same intent (key) and has the same spec:
// what Create asks of a job at a derived id before it answers a replay
// with it (a job created with an explicit id may sit at another's derived
// id). (A job Create put under a
// successor id, its intent's first job having expired, is not found: its
// replay gets the refusal.) Nothing is written either way.
func (h *Handler) replayOr(ctx context.Context, refusal *apiError, tenant, key string, spec map[string]string, tr *trace) answer {
	j, err := h.cfg.Store.Get(ctx, jobs.DeriveJobID(tenant, key))
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		return errAnswer(refusal)
	case err != nil:
		// Retryable: a refusal now could be wrong for a replay.
		return errAnswer(internal(err))
	case j.Tenant != tenant || j.IntentID != key || !maps.Equal(j.Spec, spec):
		return errAnswer(refusal)
	}
	return created(j, http.StatusOK, tr)
}

// runnable asks the tasks' check, if there is one, whether a task can run
// spec.
func (h *Handler) runnable(spec map[string]string) *apiError {
	if h.cfg.ValidateSpec == nil {
		return nil
	}
	err := h.cfg.ValidateSpec(spec)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, task.ErrUnknownTask):
		return fail(http.StatusBadRequest, CodeUnknownTask, "no task can run this spec: %s", truncate(err.Error(), 512))
	default:
		return fail(http.StatusBadRequest, CodeInvalidSpec, "the task cannot run this spec: %s", truncate(err.Error(), 512))
	}
}

// own returns the job if it exists and belongs to tenant. Another tenant's
// job is answered exactly like a missing one.
func (h *Handler) own(ctx context.Context, id, tenant string) (jobs.Job, *apiError) {
	if e := jobID(id); e != nil {
		return jobs.Job{}, e
	}
	j, err := h.cfg.Store.Get(ctx, id)
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		return jobs.Job{}, jobNotFound(id)
	case err != nil:
		return jobs.Job{}, internal(err)
	case j.Tenant != tenant:
		return jobs.Job{}, jobNotFound(id)
	}
	return j, nil
}

// get answers GET /jobs/{id}; for a completed job, with a download URL.
func (h *Handler) get(ctx context.Context, id, tenant string) answer {
	j, e := h.own(ctx, id, tenant)
	if e != nil {
		return errAnswer(e)
	}
	v := jobView(&j)
	if v.Result != nil {
		expires := h.cfg.Now().Add(h.cfg.ResultURLTTL) // before signing: the URL lives at least this long
		url, err := h.cfg.Presigner.PresignGet(ctx, j.Result, h.cfg.ResultURLTTL)
		if err != nil {
			return errAnswer(internal(err))
		}
		v.Result.URL, v.Result.URLExpiresAt = url, formatTime(expires)
	}
	return answer{status: http.StatusOK, body: v}
}

// cancel answers DELETE /jobs/{id}.
func (h *Handler) cancel(ctx context.Context, id, tenant string) answer {
	j, e := h.own(ctx, id, tenant)
	if e == nil && j.Status.Final() {
		e = jobFinal(id, j.Status)
	}
	if e != nil {
		return errAnswer(e)
	}
	c, err := h.cfg.Store.Cancel(ctx, jobs.CancelRequest{JobID: id, Reason: cancelReason})
	var final *jobs.FinalError
	switch {
	case errors.As(err, &final): // it ended between the read and the cancel
		e = jobFinal(id, final.Status)
	case errors.Is(err, jobs.ErrNotFound): // expired between the read and the cancel
		e = jobNotFound(id)
	case err != nil:
		e = internal(err)
	}
	if e != nil {
		return errAnswer(e)
	}
	return answer{status: http.StatusOK, body: jobView(&c)}
}

func jobFinal(id string, s jobs.Status) *apiError {
	e := fail(http.StatusConflict, CodeJobFinal, "job %s is already %s", id, s)
	e.detail.Status = string(s)
	return e
}

// finish logs the request and builds the response.
func (h *Handler) finish(ctx context.Context, req *events.APIGatewayV2HTTPRequest, a *answer, tr *trace) events.APIGatewayV2HTTPResponse {
	headers := map[string]string{
		"Content-Type":           "application/json",
		"Cache-Control":          "no-store", // job state changes; a result URL is a credential
		"X-Content-Type-Options": "nosniff",
	}
	for k, v := range a.headers {
		headers[k] = v
	}
	body := a.body
	if a.err != nil {
		body = ErrorBody{Error: a.err.detail}
		switch a.status {
		case http.StatusMethodNotAllowed:
			headers["Allow"] = a.err.allow
		case http.StatusUnauthorized:
			headers["WWW-Authenticate"] = "Bearer"
		case http.StatusServiceUnavailable:
			headers["Retry-After"] = RetryAfterSeconds
		}
	}
	raw, err := json.Marshal(body)
	if err != nil { // the views are plain strings and numbers; this is a bug
		a.status, a.err = http.StatusInternalServerError, internal(fmt.Errorf("encode answer: %w", err))
		raw, _ = json.Marshal(ErrorBody{Error: a.err.detail})
	}
	h.log(ctx, req, a, tr)
	if req.RequestContext.HTTP.Method == http.MethodHead {
		// GET's status and headers, without the content (RFC 9110, 9.3.2).
		raw = nil
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: a.status, Headers: headers, Body: string(raw)}
}

func (h *Handler) log(ctx context.Context, req *events.APIGatewayV2HTTPRequest, a *answer, tr *trace) {
	attrs := make([]slog.Attr, 0, 10)
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		attrs = append(attrs, slog.String("aws_request_id", lc.AwsRequestID))
	}
	attrs = append(attrs,
		slog.String("api_request_id", req.RequestContext.RequestID),
		slog.String("method", truncate(req.RequestContext.HTTP.Method, 32)),
		slog.String("path", truncate(req.RawPath, 256)),
		slog.Int("status", a.status),
	)
	if tr.tenant != "" {
		attrs = append(attrs, slog.String("tenant", tr.tenant))
	}
	if tr.jobID != "" {
		attrs = append(attrs, slog.String("job_id", truncate(tr.jobID, 256)))
	}
	level := slog.LevelInfo
	if a.err != nil {
		attrs = append(attrs, slog.String("code", a.err.detail.Code))
		if a.err.cause != nil {
			level = slog.LevelError
			attrs = append(attrs, slog.String("error", a.err.cause.Error()))
		}
	}
	h.cfg.Logger.LogAttrs(ctx, level, "request", attrs...)
}
