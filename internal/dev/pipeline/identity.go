package pipeline

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// The local tokens' issuer, audience and lifetime. In AWS the HTTP API's
// JWT authorizer checks the identity provider's issuer and audience
// (template.yaml's JwtIssuer and JwtAudience); locally Identity is both the
// provider and the authorizer.
const (
	LocalIssuer   = "fifoworker-local"
	LocalAudience = "fifoworker-jobs-api"
	LocalTokenTTL = 12 * time.Hour
)

// ErrInvalidToken is what Verify's errors wrap: the request is answered 401
// before the function runs, as API Gateway answers it.
var ErrInvalidToken = errors.New("invalid token")

// Identity stands in for the HTTP API's JWT authorizer on the local server,
// where there is no API Gateway in front of intake: it issues HS256 tokens
// signed with a key made when it is created (and never stored), and
// verifies a request's token the way the authorizer does (signature,
// issuer, audience, expiry, not-before, issued-at) before the function sees
// the request.
//
// It lives here, in the local pipeline, and nowhere the Lambda build
// reaches (TestTheLambdaBuildCannotReachTheLocalIdentity): a deployed
// intake trusts only what API Gateway verified, and internal/app/intake has no
// identity path of its own.
type Identity struct {
	key         []byte
	tenantClaim string
	now         func() time.Time
}

// IdentityConfig configures an Identity.
type IdentityConfig struct {
	// TenantClaim names the claim that carries the tenant: intake's
	// TENANT_CLAIM (Pipeline.Setting gives it). Required.
	TenantClaim string
	// Now is the clock of issuing and verifying. Default time.Now.
	Now func() time.Time
}

// Validate reports a field that cannot work, wrapping ErrInvalidConfig.
func (c IdentityConfig) Validate() error {
	if c.TenantClaim == "" {
		return fmt.Errorf("%w: TenantClaim is empty", ErrInvalidConfig)
	}
	return nil
}

// NewIdentity makes an identity with a fresh random key, or returns an
// error wrapping ErrInvalidConfig.
func NewIdentity(cfg IdentityConfig) (*Identity, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("pipeline: identity key: %w", err)
	}
	return &Identity{key: key, tenantClaim: cfg.TenantClaim, now: cfg.Now}, nil
}

// TenantClaim is the claim that carries the tenant.
func (id *Identity) TenantClaim() string { return id.tenantClaim }

// Token issues a token for a user of tenant, valid for LocalTokenTTL.
func (id *Identity) Token(tenant string) (string, error) {
	now := id.now()
	return id.sign(map[string]any{
		id.tenantClaim: tenant,
		"sub":          "local-user-" + tenant,
		"iss":          LocalIssuer,
		"aud":          LocalAudience,
		"iat":          now.Unix(),
		"exp":          now.Add(LocalTokenTTL).Unix(),
	})
}

// jwtHeader is the one header Identity issues and accepts.
const jwtHeader = `{"alg":"HS256","typ":"JWT"}`

func (id *Identity) sign(claims map[string]any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("pipeline: token claims: %w", err)
	}
	signing := b64(jwtHeader) + "." + base64.RawURLEncoding.EncodeToString(payload)
	return signing + "." + base64.RawURLEncoding.EncodeToString(id.mac(signing)), nil
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func (id *Identity) mac(signing string) []byte {
	m := hmac.New(sha256.New, id.key)
	m.Write([]byte(signing))
	return m.Sum(nil)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidToken, fmt.Sprintf(format, args...))
}

// Verify checks a token (without its "Bearer " prefix) and returns its
// claims as API Gateway hands them to the function: every value a string
// (numbers in their JSON form, arrays as "[a b]", objects as JSON). The
// signature is checked before anything the payload says is believed, and
// only HS256 is accepted: the header's alg is never a choice the caller
// makes.
func (id *Identity) Verify(token string) (map[string]string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, invalid("the token is not a JWS in compact form (three dot-separated parts)")
	}
	rawHeader, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, invalid("the token's header is not base64url")
	}
	var header struct {
		Alg  string `json:"alg"`
		Crit []any  `json:"crit"`
	}
	if err := json.Unmarshal(rawHeader, &header); err != nil {
		return nil, invalid("the token's header is not a JSON object")
	}
	if header.Alg != "HS256" {
		return nil, invalid("signing method %q is not accepted; tokens are HS256", truncate(header.Alg, 16))
	}
	if header.Crit != nil {
		return nil, invalid("the token's header has critical extensions")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, id.mac(parts[0]+"."+parts[1])) {
		return nil, invalid("the token's signature is not valid")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, invalid("the token's payload is not base64url")
	}
	claims, err := decodeClaims(payload)
	if err != nil {
		return nil, err
	}
	if iss, _ := claims["iss"].(string); iss != LocalIssuer {
		return nil, invalid("the token does not have a valid issuer")
	}
	if !hasAudience(claims["aud"], LocalAudience) {
		return nil, invalid("the token does not have a valid audience")
	}
	now := id.now().Unix()
	exp, ok := numericDate(claims["exp"])
	switch {
	case !ok:
		return nil, invalid("the token has no valid exp claim")
	case now >= exp:
		return nil, invalid("the token has expired")
	}
	for _, c := range []string{"nbf", "iat"} {
		v, present := claims[c]
		if !present {
			continue
		}
		t, ok := numericDate(v)
		if !ok {
			return nil, invalid("the token's %s claim is not a number", c)
		}
		if t > now {
			return nil, invalid("the token's %s claim is in the future", c)
		}
	}
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		out[k] = claimString(v)
	}
	return out, nil
}

// decodeClaims decodes a payload that must be exactly one JSON object,
// keeping numbers as written.
func decodeClaims(payload []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var claims map[string]any
	if err := dec.Decode(&claims); err != nil || claims == nil {
		return nil, invalid("the token's payload is not a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalid("the token's payload has data after its JSON object")
	}
	return claims, nil
}

// hasAudience: aud is the audience, or an array that holds it (RFC 7519).
func hasAudience(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		for _, v := range a {
			if v == want {
				return true
			}
		}
	}
	return false
}

// numericDate is a whole number of seconds since the epoch.
func numericDate(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// claimString is how API Gateway's JWT authorizer renders a claim in the
// payload 2.0 event: strings as they are, numbers and booleans as written,
// arrays as "[a b]", objects as JSON.
func claimString(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case json.Number:
		return c.String()
	case []any:
		parts := make([]string, len(c))
		for i, e := range c {
			parts[i] = claimString(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case nil:
		return ""
	case bool:
		return fmt.Sprint(c)
	default:
		b, _ := json.Marshal(c)
		return string(b)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
