package pipeline

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// issuedAt is the clock of the identity tests.
var issuedAt = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func newTestIdentity(t *testing.T, now *time.Time) *Identity {
	t.Helper()
	id, err := NewIdentity(IdentityConfig{TenantClaim: "tenant", Now: func() time.Time { return *now }})
	require.NoError(t, err)
	return id
}

// validClaims are what Token signs, for tests that sign a variation.
func validClaims(now time.Time) map[string]any {
	return map[string]any{
		"tenant": "t-1", "sub": "local-user-t-1", "iss": LocalIssuer, "aud": LocalAudience,
		"iat": now.Unix(), "exp": now.Add(LocalTokenTTL).Unix(),
	}
}

func TestATokenVerifiesToItsClaimsAsStrings(t *testing.T) {
	t.Parallel()
	now := issuedAt
	id := newTestIdentity(t, &now)
	tok, err := id.Token("t-1")
	require.NoError(t, err)
	now = now.Add(LocalTokenTTL - time.Second)
	claims, err := id.Verify(tok)
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"tenant": "t-1", "sub": "local-user-t-1", "iss": LocalIssuer, "aud": LocalAudience,
		"iat": strconv.FormatInt(issuedAt.Unix(), 10), "exp": strconv.FormatInt(issuedAt.Add(12*time.Hour).Unix(), 10),
	}, claims)
}

// API Gateway hands every claim to the function as a string.
func TestClaimsAreRenderedAsAPIGatewayRendersThem(t *testing.T) {
	t.Parallel()
	now := issuedAt
	id := newTestIdentity(t, &now)
	c := validClaims(now)
	c["aud"] = []string{"other", LocalAudience} // an array holding the audience is accepted
	c["groups"] = []string{"admins", "users"}
	c["ratio"] = 1.5
	c["admin"] = true
	c["address"] = map[string]any{"country": "NL"}
	tok, err := id.sign(c)
	require.NoError(t, err)
	claims, err := id.Verify(tok)
	require.NoError(t, err)
	require.Equal(t, "[other "+LocalAudience+"]", claims["aud"])
	require.Equal(t, "[admins users]", claims["groups"])
	require.Equal(t, "1.5", claims["ratio"])
	require.Equal(t, "true", claims["admin"])
	require.JSONEq(t, `{"country":"NL"}`, claims["address"])
}

func TestVerifyRefusesEveryTokenItDidNotIssueAsIs(t *testing.T) {
	t.Parallel()
	now := issuedAt
	id := newTestIdentity(t, &now)
	other := newTestIdentity(t, &now)
	good, err := id.Token("t-1")
	require.NoError(t, err)
	parts := strings.Split(good, ".")
	signed := func(edit func(map[string]any)) string {
		c := validClaims(now)
		edit(c)
		tok, err := id.sign(c)
		require.NoError(t, err)
		return tok
	}
	foreign, err := other.Token("t-1")
	require.NoError(t, err)
	// A payload that makes the caller t-2, under t-1's signature.
	t2 := validClaims(now)
	t2["tenant"] = "t-2"
	forged, err := other.sign(t2)
	require.NoError(t, err)
	tampered := parts[0] + "." + strings.Split(forged, ".")[1] + "." + parts[2]
	hs := func(header, payload string) string { // a correctly signed token with any header
		signing := b64(header) + "." + b64(payload)
		return signing + "." + base64.RawURLEncoding.EncodeToString(id.mac(signing))
	}

	for name, tc := range map[string]struct {
		token string
		want  string
	}{
		"signed with another key":          {foreign, "signature is not valid"},
		"another tenant's payload":         {tampered, "signature is not valid"},
		"signature cut off":                {parts[0] + "." + parts[1] + ".", "signature is not valid"},
		"signature not base64url":          {parts[0] + "." + parts[1] + ".***", "signature is not valid"},
		"alg none, no signature":           {b64(`{"alg":"none","typ":"JWT"}`) + "." + parts[1] + ".", `signing method "none"`},
		"alg none, HS256 signature":        {hs(`{"alg":"none"}`, `{}`), `signing method "none"`},
		"alg HS512":                        {hs(`{"alg":"HS512"}`, `{}`), `signing method "HS512"`},
		"alg RS256":                        {hs(`{"alg":"RS256"}`, `{}`), `signing method "RS256"`},
		"no alg":                           {hs(`{"typ":"JWT"}`, `{}`), `signing method ""`},
		"critical header":                  {hs(`{"alg":"HS256","crit":["exp"]}`, `{}`), "critical"},
		"expired":                          {signed(func(c map[string]any) { c["exp"] = now.Unix() }), "expired"},
		"expired an hour ago":              {signed(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() }), "expired"},
		"no exp":                           {signed(func(c map[string]any) { delete(c, "exp") }), "no valid exp"},
		"exp as a string":                  {signed(func(c map[string]any) { c["exp"] = "4102444800" }), "no valid exp"},
		"wrong audience":                   {signed(func(c map[string]any) { c["aud"] = "another-api" }), "valid audience"},
		"audience array without ours":      {signed(func(c map[string]any) { c["aud"] = []string{"a", "b"} }), "valid audience"},
		"no audience":                      {signed(func(c map[string]any) { delete(c, "aud") }), "valid audience"},
		"wrong issuer":                     {signed(func(c map[string]any) { c["iss"] = "https://evil.example" }), "valid issuer"},
		"no issuer":                        {signed(func(c map[string]any) { delete(c, "iss") }), "valid issuer"},
		"not before the future":            {signed(func(c map[string]any) { c["nbf"] = now.Add(time.Minute).Unix() }), "nbf claim is in the future"},
		"issued in the future":             {signed(func(c map[string]any) { c["iat"] = now.Add(time.Minute).Unix() }), "iat claim is in the future"},
		"iat not a number":                 {signed(func(c map[string]any) { c["iat"] = "yesterday" }), "iat claim is not a number"},
		"empty":                            {"", "compact form"},
		"one part":                         {"abc", "compact form"},
		"two parts":                        {parts[0] + "." + parts[1], "compact form"},
		"four parts":                       {good + ".x", "compact form"},
		"header not base64url":             {"!!." + parts[1] + "." + parts[2], "header is not base64url"},
		"header with padding":              {parts[0] + "=." + parts[1] + "." + parts[2], "header is not base64url"},
		"header not JSON":                  {b64("alg:HS256") + "." + parts[1] + "." + parts[2], "header is not a JSON object"},
		"payload not JSON, signed":         {hs(`{"alg":"HS256"}`, `tenant=t-1`), "payload is not a JSON object"},
		"payload an array, signed":         {hs(`{"alg":"HS256"}`, `["t-1"]`), "payload is not a JSON object"},
		"payload with trailing data":       {hs(`{"alg":"HS256"}`, `{} {}`), "data after"},
		"payload JSON null, signed":        {hs(`{"alg":"HS256"}`, `null`), "payload is not a JSON object"},
		"payload not base64url, signed":    {b64(`{"alg":"HS256"}`) + ".%%%." + base64.RawURLEncoding.EncodeToString(id.mac(b64(`{"alg":"HS256"}`)+".%%%")), "payload is not base64url"},
		"a Bearer prefix is not the token": {"Bearer " + good, "header is not base64url"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			claims, err := id.Verify(tc.token)
			require.ErrorIs(t, err, ErrInvalidToken)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, claims)
		})
	}
}

func TestEachIdentityHasItsOwnKey(t *testing.T) {
	t.Parallel()
	now := issuedAt
	a, b := newTestIdentity(t, &now), newTestIdentity(t, &now)
	require.NotEqual(t, a.key, b.key)
	require.Len(t, a.key, 32)
}

// NewIdentity refuses an identity that could issue no tenant, naming the
// field; a clock is optional.
func TestNewIdentityRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	id, err := NewIdentity(IdentityConfig{})
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "TenantClaim")
	require.Nil(t, id)
	id, err = NewIdentity(IdentityConfig{TenantClaim: "t"})
	require.NoError(t, err)
	require.Equal(t, "t", id.TenantClaim())
}
