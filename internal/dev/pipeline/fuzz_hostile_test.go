package pipeline

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzVerify: the local stand-in for the JWT authorizer reads any token
// without a panic and refuses with ErrInvalidToken. The fuzzer cannot
// forge a signature, so each input is tried twice: as it is (it must be
// refused) and with header and payload signed with the identity's key, so
// that the decoding of header and claims behind the signature check is
// reached. A token it accepts is HS256, from the local issuer, for the
// local audience and not expired; a token it issued for any tenant is
// accepted with that tenant.
func FuzzVerify(f *testing.F) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	exp := `,"iss":"fifoworker-local","aud":"fifoworker-jobs-api","exp":` + "1796040000"
	for _, seed := range [][3]string{
		{jwtHeader, `{"tenant":"t-1"` + exp + `,"iat":1796000000}`, "t-1"},
		{`{"alg":"none","typ":"JWT"}`, `{"tenant":"t-1"` + exp + `}`, "t-2"},
		{`{"alg":"HS256","crit":["b64"]}`, `{"tenant":"t-1"` + exp + `}`, ""},
		{jwtHeader, `{"tenant":"t-1"` + exp + `,"nbf":1796100000}`, "ünï"},
		{jwtHeader, `{"tenant":["t-1","t-2"],"iss":"fifoworker-local","aud":["x","fifoworker-jobs-api"],"exp":1796040000.5}`, "t\x00"},
		{jwtHeader, `{"tenant":"t-1"` + exp + `} {}`, "#"},
		{`null`, `null`, "a.b.c"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	id, err := NewIdentity(IdentityConfig{TenantClaim: "tenant", Now: func() time.Time { return now }})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, header, payload, tenant string) {
		signing := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
		for _, token := range []string{header + "." + payload + "." + tenant, signing + "." + base64.RawURLEncoding.EncodeToString(id.mac(signing))} {
			claims, err := id.Verify(token)
			if err != nil {
				require.ErrorIs(t, err, ErrInvalidToken)
				require.Nil(t, claims)
				continue
			}
			require.Equal(t, strings.Count(token, "."), 2)
			var h struct{ Alg string }
			parts := strings.Split(token, ".")
			raw, err := base64.RawURLEncoding.DecodeString(parts[0])
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &h))
			require.Equal(t, "HS256", h.Alg)
			require.Equal(t, LocalIssuer, claims["iss"])
			require.Contains(t, claims["aud"], LocalAudience)
		}

		tok, err := id.Token(tenant)
		require.NoError(t, err)
		claims, err := id.Verify(tok)
		require.NoError(t, err)
		// encoding/json writes each byte that is not UTF-8 as U+FFFD, as
		// ranging over the string reads it.
		var want strings.Builder
		for _, r := range tenant {
			want.WriteRune(r)
		}
		require.Equal(t, want.String(), claims["tenant"])
		// A token signed with another key is refused, whatever it says.
		other, err := NewIdentity(IdentityConfig{TenantClaim: "tenant", Now: func() time.Time { return now }})
		require.NoError(t, err)
		_, err = other.Verify(tok)
		require.True(t, errors.Is(err, ErrInvalidToken))
	})
}
