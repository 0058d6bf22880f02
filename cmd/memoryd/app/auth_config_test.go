package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
)

// writeECJWKS writes a JWK Set holding k's public key under kid and
// returns its path.
func writeECJWKS(t *testing.T, k *ecdsa.PrivateKey, kid string) string {
	t.Helper()
	pt, err := k.PublicKey.Bytes()
	require.NoError(t, err)
	b64 := base64.RawURLEncoding.EncodeToString
	data, err := json.Marshal(map[string]any{"keys": []map[string]any{{
		"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256", "x": b64(pt[1:33]), "y": b64(pt[33:]),
	}}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "jwks.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func TestLoadConfigAuthFlags(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	jwks := writeECJWKS(t, key, "idp-1")

	cfg, _, err := LoadConfig(nil, env(nil))
	require.NoError(t, err)
	require.Equal(t, AuthConfig{ClockSkew: 30 * time.Second}, cfg.Auth, "defaults: HS256 only, no iss/aud checks")

	cfg, _, err = LoadConfig([]string{"--auth-jwks-file", jwks, "--auth-clock-skew", "2m"},
		env(map[string]string{"MEMORYD_AUTH_ISSUER": "https://idp.example.com/", "MEMORYD_AUTH_AUDIENCE": "memoryd"}))
	require.NoError(t, err)
	require.Equal(t, AuthConfig{JWKSFile: jwks, Issuer: "https://idp.example.com/", Audience: "memoryd", ClockSkew: 2 * time.Minute}, cfg.Auth)

	// The options wire a verifier that takes the external issuer's ES256
	// tokens and the suite's own HS256 service tokens, both with iss/aud.
	secret := []byte("0123456789abcdef0123456789abcdef-app-test")
	v, err := auth.NewVerifier(secret, cfg.Auth.VerifierOptions(nil)...)
	require.NoError(t, err)
	s, err := auth.NewSigner(secret, cfg.Auth.SignerOptions()...)
	require.NoError(t, err)
	internal, err := auth.NewServiceCredentials(s, "memoryd/gateway").Token()
	require.NoError(t, err)
	_, err = v.Verify(internal)
	require.NoError(t, err)

	now := time.Now()
	claims := auth.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: "https://idp.example.com/", Audience: jwt.ClaimStrings{"other", "memoryd"}, Subject: "curator",
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute)),
		},
		Roles: []auth.Role{auth.RoleAgent}, Agents: []string{"curator"},
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, &claims)
	tok.Header["kid"] = "idp-1"
	external, err := tok.SignedString(key)
	require.NoError(t, err)
	got, err := v.Verify(external)
	require.NoError(t, err)
	require.Equal(t, "curator", got.Subject)

	claims.Audience = jwt.ClaimStrings{"other"}
	tok = jwt.NewWithClaims(jwt.SigningMethodES256, &claims)
	tok.Header["kid"] = "idp-1"
	wrongAud, err := tok.SignedString(key)
	require.NoError(t, err)
	_, err = v.Verify(wrongAud)
	require.ErrorIs(t, err, auth.ErrWrongAudience)
}

func TestLoadConfigAuthErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	garbage := filepath.Join(dir, "garbage.json")
	require.NoError(t, os.WriteFile(garbage, []byte("-----BEGIN PUBLIC KEY-----\n"), 0o644))
	encOnly := filepath.Join(dir, "enc.json")
	require.NoError(t, os.WriteFile(encOnly, []byte(`{"keys":[{"kty":"RSA","kid":"k1","use":"enc","n":"AQAB","e":"AQAB"}]}`), 0o644))
	empty := filepath.Join(dir, "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte(`{"keys":[]}`), 0o644))

	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"skew above maximum", []string{"--auth-clock-skew", "6m"}, nil, "--auth-clock-skew 6m0s: must be between 0 and 5m0s"},
		{"negative skew", []string{"--auth-clock-skew=-1s"}, nil, "--auth-clock-skew -1s: must be between 0 and 5m0s"},
		{"skew not a duration", nil, map[string]string{"MEMORYD_AUTH_CLOCK_SKEW": "a bit"}, "auth-clock-skew"},
		{"missing jwks file", []string{"--auth-jwks-file", missing}, nil, "--auth-jwks-file: auth: jwks: open " + missing + ": no such file or directory"},
		{"jwks file is a directory", []string{"--auth-jwks-file", dir}, nil, "--auth-jwks-file: auth: jwks " + dir + " is not a regular file"},
		{"jwks file is not JSON", []string{"--auth-jwks-file", garbage}, nil, "--auth-jwks-file: auth: jwks " + garbage + ": invalid JSON"},
		{"jwks without usable keys", []string{"--auth-jwks-file", encOnly}, nil, `--auth-jwks-file: auth: jwks ` + encOnly + `: no usable keys (key 0 (kid "k1"): use "enc" is not sig)`},
		{"empty jwks", nil, map[string]string{"MEMORYD_AUTH_JWKS_FILE": empty}, "--auth-jwks-file: auth: jwks " + empty + ": no keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := LoadConfig(tt.args, env(tt.env))
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
