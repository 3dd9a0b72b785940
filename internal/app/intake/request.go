package intake

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Limits of a request.
const (
	// MaxBodyBytes is the largest body POST /jobs accepts, after base64
	// decoding.
	MaxBodyBytes = 16 << 10
	// MaxIdempotencyKeyBytes is the longest Idempotency-Key.
	MaxIdempotencyKeyBytes = 512
	// MaxSpecKeys is the most keys a spec may have.
	MaxSpecKeys = 32
	// MaxSpecKeyBytes is the longest spec key; keys are [a-z0-9_]{1,64}.
	MaxSpecKeyBytes = 64
	// MaxSpecValueBytes is the longest spec value.
	MaxSpecValueBytes = 1024
	// MaxTenantBytes is the longest tenant claim (the job store's limit).
	MaxTenantBytes = 256
)

// header returns a request header. API Gateway's payload 2.0 lower-cases
// header names; a hand-built request may not, so the match ignores case.
func header(req *events.APIGatewayV2HTTPRequest, name string) (string, bool) {
	if v, ok := req.Headers[name]; ok {
		return v, true
	}
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// tenantOf returns the caller's tenant, from the claims of the JWT that API
// Gateway's authorizer has already verified. There is no other source: no
// header, no body field, no fallback.
func tenantOf(req *events.APIGatewayV2HTTPRequest, claim string) (string, *apiError) {
	a := req.RequestContext.Authorizer
	if a == nil || a.JWT == nil {
		return "", fail(http.StatusUnauthorized, CodeUnauthorized, "the request carries no verified JWT")
	}
	tenant := a.JWT.Claims[claim]
	if !validTenant(tenant) {
		return "", fail(http.StatusUnauthorized, CodeUnauthorized, "the token has no valid %q claim", claim)
	}
	return tenant, nil
}

// validTenant is the job store's tenant rule (1 to 256 bytes, no '#'),
// with printable in place of its "no control character", so that a tenant
// accepted here is never refused by the store.
func validTenant(s string) bool {
	return len(s) <= MaxTenantBytes && printable(s) && !strings.Contains(s, "#")
}

// printable reports whether s is non-empty, valid UTF-8 and every rune is
// printable (letters, marks, numbers, punctuation, symbols and the ASCII
// space): stricter than the store's "no control character".
func printable(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// idempotencyKey returns the intent id of a POST.
func idempotencyKey(req *events.APIGatewayV2HTTPRequest) (string, *apiError) {
	key, ok := header(req, "idempotency-key")
	if !ok || key == "" {
		return "", fail(http.StatusBadRequest, CodeMissingIdempotencyKey,
			"POST /jobs needs an Idempotency-Key header: the client's id of this intent, reused on every retry")
	}
	if len(key) > MaxIdempotencyKeyBytes || !printable(key) {
		return "", fail(http.StatusBadRequest, CodeInvalidIdempotencyKey,
			"the Idempotency-Key must be 1 to %d bytes of printable UTF-8", MaxIdempotencyKeyBytes)
	}
	return key, nil
}

// body returns the request body, base64-decoded if API Gateway encoded it.
func body(req *events.APIGatewayV2HTTPRequest) ([]byte, *apiError) {
	b := []byte(req.Body)
	if req.IsBase64Encoded {
		var err error
		if b, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
			return nil, fail(http.StatusBadRequest, CodeInvalidBody, "the body is marked base64 but does not decode")
		}
	}
	if len(b) > MaxBodyBytes {
		return nil, fail(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
			"the body is %d bytes; at most %d are accepted", len(b), MaxBodyBytes)
	}
	return b, nil
}

// checkJSON accepts Content-Type application/json with any parameters,
// except a charset other than UTF-8: JSON exchanged between systems is
// UTF-8 (RFC 8259).
func checkJSON(req *events.APIGatewayV2HTTPRequest) *apiError {
	ct, _ := header(req, "content-type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fail(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			"the body must be application/json, not %q", truncate(ct, 80))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fail(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			"the body must be UTF-8 JSON, not charset %q", truncate(cs, 80))
	}
	return nil
}

// decodeSpec reads the body of POST /jobs, {"spec": {"<key>": "<value>", ...}},
// and returns the spec; "spec" may be left out (an empty spec).
//
// The body is read token by token rather than unmarshalled into a struct,
// because encoding/json would accept what this API refuses: field names in
// any case ("SPEC"), a repeated field (the last one wins), null for the
// spec or a value, and invalid UTF-8 (replaced silently).
func decodeSpec(b []byte) (map[string]string, *apiError) {
	if !utf8.Valid(b) {
		return nil, fail(http.StatusBadRequest, CodeInvalidBody, "the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, fail(http.StatusBadRequest, CodeInvalidBody, "the body must be a JSON object: %s", err)
	}
	var spec map[string]string
	seen := false
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			return nil, fail(http.StatusBadRequest, CodeInvalidBody, "the body is not valid JSON: %s", jsonProblem(err))
		}
		if name != "spec" {
			return nil, fail(http.StatusBadRequest, CodeInvalidBody, "unknown field %q: the body has only \"spec\"", name)
		}
		if seen {
			return nil, fail(http.StatusBadRequest, CodeInvalidBody, "the field \"spec\" appears twice")
		}
		seen = true
		if spec, err = decodeStrings(dec); err != nil {
			return nil, fail(http.StatusBadRequest, CodeInvalidBody, "\"spec\" must be an object of string values: %s", err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, fail(http.StatusBadRequest, CodeInvalidBody, "the body is not valid JSON: %s", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fail(http.StatusBadRequest, CodeInvalidBody, "the body has data after its JSON object")
	}
	if e := validateSpec(spec); e != nil {
		return nil, e
	}
	return spec, nil
}

// decodeStrings reads one JSON object whose values are all strings; a name
// may appear once.
func decodeStrings(dec *json.Decoder) (map[string]string, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	m := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errors.New(jsonProblem(err))
		}
		k, ok := tok.(string)
		if !ok { // Token yields a name here or fails; this is belt and braces
			return nil, errors.New("found " + kind(tok) + " where a key was expected")
		}
		if _, dup := m[k]; dup {
			return nil, errors.New("key " + strconv.Quote(k) + " appears twice")
		}
		if tok, err = dec.Token(); err != nil {
			return nil, errors.New(jsonProblem(err))
		}
		v, isString := tok.(string)
		if !isString {
			return nil, errors.New("the value of " + strconv.Quote(k) + " is " + kind(tok) + ", not a string")
		}
		if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			// No job store keeps NUL (PostgreSQL's jsonb has none): jobs.ErrInvalid.
			return nil, errors.New("the key or value " + strconv.Quote(k) + " holds NUL (\\u0000)")
		}
		m[k] = v
	}
	return m, expectDelim(dec, '}')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("it ends early")
		}
		return errors.New(jsonProblem(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return errors.New("found " + kind(tok) + " where " + string(want) + " was expected")
	}
	return nil
}

// jsonProblem says what the decoder found wrong, without echoing the input.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return "syntax error at byte " + strconv.Itoa(int(syn.Offset))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "it ends early"
	}
	return "it does not parse"
}

func kind(tok json.Token) string {
	switch t := tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		if t == '[' {
			return "an array"
		}
		return strconv.Quote(string(t))
	}
	return "an unexpected value"
}

// validateSpec applies the spec's limits. Every key is checked in order, so
// the message names the first offending key.
func validateSpec(spec map[string]string) *apiError {
	if len(spec) > MaxSpecKeys {
		return fail(http.StatusBadRequest, CodeInvalidSpec, "the spec has %d keys; at most %d are allowed", len(spec), MaxSpecKeys)
	}
	keys := make([]string, 0, len(spec))
	for k := range spec {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !validSpecKey(k) {
			return fail(http.StatusBadRequest, CodeInvalidSpec,
				"spec key %s is not 1 to %d characters of a-z, 0-9 and _", strconv.Quote(truncate(k, 80)), MaxSpecKeyBytes)
		}
		if len(spec[k]) > MaxSpecValueBytes {
			return fail(http.StatusBadRequest, CodeInvalidSpec,
				"the value of spec key %q is %d bytes; at most %d are allowed", k, len(spec[k]), MaxSpecValueBytes)
		}
	}
	return nil
}

func validSpecKey(k string) bool {
	if k == "" || len(k) > MaxSpecKeyBytes {
		return false
	}
	for i := range len(k) {
		if c := k[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// jobID validates the id of /jobs/{id}: the store's own rule.
func jobID(id string) *apiError {
	if err := jobs.ValidateID(id); err != nil {
		return fail(http.StatusBadRequest, CodeInvalidJobID, "a job id is 1 to 128 characters of A-Z, a-z, 0-9, _ and -")
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
