package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
)

// MaxRequestBodyBytes is API Gateway's payload limit for an HTTP API
// (10 MB); a larger body is answered 413 before the function runs.
const MaxRequestBodyBytes = 10 << 20

// HTTPFunc is the function behind the API: Pipeline.HTTP.
type HTTPFunc func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// HTTPAPI serves the jobs API over plain HTTP the way template.yaml's HTTP
// API serves it in AWS: it verifies the caller's token (Identity, in place
// of the JWT authorizer), turns the request into a payload format 2.0 event
// on the $default stage and route, invokes the function, and writes its
// response back. What API Gateway answers itself (no or a bad token: 401;
// a body over 10 MB: 413; a failed invocation: 500) it answers here, in the
// API's error shape (intake.ErrorBody) rather than API Gateway's
// {"message": ...}, so clients see one shape locally.
type HTTPAPI struct {
	fn  HTTPFunc
	id  *Identity
	log *slog.Logger
	now func() time.Time
}

// HTTPAPIConfig configures an HTTPAPI.
type HTTPAPIConfig struct {
	// Handler is the function behind the API (Pipeline.HTTP). Required.
	Handler HTTPFunc
	// Identity verifies each request's token, on its clock, which is the
	// API's too. Required.
	Identity *Identity
	// Logger gets one line per request. Default (nil): nothing is logged.
	Logger *slog.Logger
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c HTTPAPIConfig) Validate() error {
	switch {
	case c.Handler == nil:
		return fmt.Errorf("%w: Handler is nil", ErrInvalidConfig)
	case c.Identity == nil:
		return fmt.Errorf("%w: Identity is nil", ErrInvalidConfig)
	}
	return nil
}

// NewHTTPAPI serves cfg.Handler behind cfg.Identity, or returns an error
// wrapping ErrInvalidConfig.
func NewHTTPAPI(cfg HTTPAPIConfig) (*HTTPAPI, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &HTTPAPI{fn: cfg.Handler, id: cfg.Identity, log: log, now: cfg.Identity.now}, nil
}

func (a *HTTPAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := a.now()
	reqID := apiRequestID()
	w.Header().Set("Apigw-Requestid", reqID)
	status, tenant := a.serve(w, r, reqID, start)
	attrs := []slog.Attr{
		slog.String("api_request_id", reqID), slog.String("method", r.Method),
		slog.String("path", r.URL.EscapedPath()), slog.Int("status", status),
		slog.Duration("duration", a.now().Sub(start).Round(time.Millisecond)),
	}
	if tenant != "" {
		attrs = append(attrs, slog.String("tenant", tenant))
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// serve answers r and returns the status and the verified tenant.
func (a *HTTPAPI) serve(w http.ResponseWriter, r *http.Request, reqID string, now time.Time) (int, string) {
	claims, err := a.authorize(r)
	if err != nil {
		challenge := `Bearer`
		if !errors.Is(err, errNoToken) {
			challenge = fmt.Sprintf(`Bearer error="invalid_token", error_description=%q`, strings.TrimPrefix(err.Error(), ErrInvalidToken.Error()+": "))
		}
		w.Header().Set("WWW-Authenticate", challenge)
		return writeError(w, http.StatusUnauthorized, intake.CodeUnauthorized, err.Error()), ""
	}
	tenant := claims[a.id.tenantClaim]
	if r.ContentLength > MaxRequestBodyBytes {
		return tooLarge(w), tenant
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBodyBytes))
	if err != nil {
		var big *http.MaxBytesError
		if errors.As(err, &big) {
			return tooLarge(w), tenant
		}
		return writeError(w, http.StatusBadRequest, intake.CodeInvalidBody, "the request body could not be read"), tenant
	}
	resp, err := a.fn(r.Context(), apiEvent(r, body, claims, reqID, now))
	if err != nil {
		a.log.LogAttrs(r.Context(), slog.LevelError, "invocation failed", slog.String("api_request_id", reqID), slog.String("error", err.Error()))
		return writeError(w, http.StatusInternalServerError, intake.CodeInternal, "the function failed; see its log"), tenant
	}
	if err := writeResponse(w, &resp); err != nil {
		a.log.LogAttrs(r.Context(), slog.LevelError, "malformed function response", slog.String("api_request_id", reqID), slog.String("error", err.Error()))
		return writeError(w, http.StatusInternalServerError, intake.CodeInternal, "the function's response is malformed; see the log"), tenant
	}
	return resp.StatusCode, tenant
}

var errNoToken = errors.New("the request carries no token; send Authorization: Bearer TOKEN")

// authorize reads the token from the Authorization header, with or
// without the "Bearer " prefix as API Gateway accepts it, and verifies it.
func (a *HTTPAPI) authorize(r *http.Request) (map[string]string, error) {
	v := strings.Join(r.Header.Values("Authorization"), ",")
	if scheme, rest, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "Bearer") {
		v = rest
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, errNoToken
	}
	return a.id.Verify(v)
}

func tooLarge(w http.ResponseWriter) int {
	w.Header().Set("Connection", "close") // the rest of the body is not read
	return writeError(w, http.StatusRequestEntityTooLarge, intake.CodePayloadTooLarge,
		fmt.Sprintf("the request body is over API Gateway's limit of %d bytes", MaxRequestBodyBytes))
}

// writeError answers in the API's error shape, with intake's headers.
func writeError(w http.ResponseWriter, status int, code, message string) int {
	b, _ := json.Marshal(intake.ErrorBody{Error: intake.ErrorDetail{Code: code, Message: message}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return status
}

// apiEvent builds the payload format 2.0 event API Gateway sends for r on
// the $default stage and route: header names lower-cased and repeated
// headers joined with commas (cookies apart, in Cookies), query parameters
// likewise, the verified claims as the JWT authorizer's context, and a
// body that is not text base64-encoded.
func apiEvent(r *http.Request, body []byte, claims map[string]string, reqID string, now time.Time) events.APIGatewayV2HTTPRequest {
	sourceIP, port := r.RemoteAddr, ""
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		sourceIP = h
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		_, port, _ = net.SplitHostPort(local.String())
	}
	headers := map[string]string{}
	var cookies []string
	for name, values := range r.Header {
		lower := strings.ToLower(name)
		if lower == "cookie" {
			for _, v := range values {
				for c := range strings.SplitSeq(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[lower] = strings.Join(values, ",")
	}
	headers["host"] = r.Host
	if xff := headers["x-forwarded-for"]; xff != "" {
		headers["x-forwarded-for"] = xff + ", " + sourceIP
	} else {
		headers["x-forwarded-for"] = sourceIP
	}
	headers["x-forwarded-proto"] = "http"
	if port != "" {
		headers["x-forwarded-port"] = port
	}
	var query map[string]string
	if r.URL.RawQuery != "" {
		values, _ := url.ParseQuery(r.URL.RawQuery) // what parses; API Gateway passes rawQueryString as sent too
		query = make(map[string]string, len(values))
		for k, vs := range values {
			query[k] = strings.Join(vs, ",")
		}
	}
	path := r.URL.EscapedPath()
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, RawQueryString: r.URL.RawQuery,
		Cookies: cookies, Headers: headers, QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "$default", AccountID: localdeploy.LocalAccountID, Stage: "$default", RequestID: reqID,
			APIID: "local", DomainName: r.Host, DomainPrefix: strings.SplitN(r.Host, ".", 2)[0],
			Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: path, Protocol: r.Proto, SourceIP: sourceIP, UserAgent: r.UserAgent(),
			},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
			},
		},
	}
	if len(body) > 0 {
		if textual(headers["content-type"]) && utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

// textual reports whether API Gateway passes a body of this content type
// as text: text/*, application/json, application/xml and
// application/javascript (measured against AWS: everything else, a missing
// type and form data included, arrives base64-encoded). A body that is not
// valid UTF-8 is encoded too, so no byte is lost on the way.
func textual(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript":
		return true
	}
	return strings.HasPrefix(mt, "text/")
}

// writeResponse writes the function's payload format 2.0 response: its
// status, headers, each cookie as a Set-Cookie header, and its body,
// base64-decoded when it says so.
func writeResponse(w http.ResponseWriter, resp *events.APIGatewayV2HTTPResponse) error {
	if resp.StatusCode < 100 || resp.StatusCode > 599 {
		return fmt.Errorf("status code %d", resp.StatusCode)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			return fmt.Errorf("body marked base64: %w", err)
		}
	}
	h := w.Header()
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	return nil
}

// apiRequestID looks like API Gateway's (e.g. "Mc7UVioPPHcEKPA="): 11
// random bytes in base64.
func apiRequestID() string {
	var b [11]byte
	_, _ = rand.Read(b[:])
	return base64.StdEncoding.EncodeToString(b[:])
}

// ErrNotLoopback is ListenLoopback's refusal of any other address.
var ErrNotLoopback = errors.New("not a loopback address")

// ListenLoopback listens on addr, which must be a loopback address
// (127.0.0.0/8, ::1, or localhost, taken as 127.0.0.1): the local API has
// no TLS, and its tokens are printed to the terminal.
func ListenLoopback(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("pipeline: address %q: %w", addr, err)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("pipeline: address %q: %w: the local API listens on 127.0.0.1, ::1 or localhost only "+
			"(it has no TLS, and anyone who reaches it with a printed token acts as that tenant)", addr, ErrNotLoopback)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("pipeline: listen: %w", err)
	}
	return ln, nil
}
