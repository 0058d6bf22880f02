package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// RSA key generation is slow under -race, so the test keys are made once
// per run (still fresh, real keys: nothing is checked in).
var (
	testRSAKeys = sync.OnceValue(func() []*rsa.PrivateKey {
		keys := make([]*rsa.PrivateKey, 3)
		for i := range keys {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			keys[i] = k
		}
		return keys
	})
	testECKeys = sync.OnceValue(func() []*ecdsa.PrivateKey {
		keys := make([]*ecdsa.PrivateKey, 2)
		for i := range keys {
			k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				panic(err)
			}
			keys[i] = k
		}
		return keys
	})
)

const (
	testIssuer   = "https://idp.example.com/"
	testAudience = "memoryd"
)

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// rsaJWK is the public JWK of k; extra members are merged in.
func rsaJWK(k *rsa.PrivateKey, kid string, extra ...any) map[string]any {
	m := map[string]any{"kty": "RSA", "n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
	if kid != "" {
		m["kid"] = kid
	}
	return merge(m, extra...)
}

// ecJWK is the public JWK of k; extra members are merged in.
func ecJWK(tb testing.TB, k *ecdsa.PrivateKey, kid string, extra ...any) map[string]any {
	tb.Helper()
	pt, err := k.PublicKey.Bytes() // 0x04 || x || y
	require.NoError(tb, err)
	m := map[string]any{"kty": "EC", "crv": "P-256", "x": b64(pt[1:33]), "y": b64(pt[33:])}
	if kid != "" {
		m["kid"] = kid
	}
	return merge(m, extra...)
}

func merge(m map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func jwksJSON(tb testing.TB, keys ...map[string]any) []byte {
	tb.Helper()
	if keys == nil {
		keys = []map[string]any{}
	}
	b, err := json.Marshal(map[string]any{"keys": keys})
	require.NoError(tb, err)
	return b
}

// writeJWKS (re)writes the JWKS file at path.
func writeJWKS(tb testing.TB, path string, keys ...map[string]any) {
	tb.Helper()
	require.NoError(tb, os.WriteFile(path, jwksJSON(tb, keys...), 0o644))
}

// signKID signs claims with method and key, setting the kid header unless
// kid is "".
func signKID(tb testing.TB, method jwt.SigningMethod, key any, kid string, claims jwt.Claims) string {
	tb.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	require.NoError(tb, err)
	return s
}

// externalClaims are claims an external issuer would put in a valid token
// at t0.
func externalClaims(tb testing.TB) Claims {
	tb.Helper()
	c := validClaims(tb)
	c.Issuer = testIssuer
	c.Audience = jwt.ClaimStrings{testAudience}
	return c
}

func rsaPublicPEM(tb testing.TB, k *rsa.PrivateKey) []byte {
	tb.Helper()
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(tb, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// newJWKSVerifier writes keys to a fresh JWKS file and returns a Verifier
// for it with the test issuer and audience, plus the file's path.
func newJWKSVerifier(tb testing.TB, clk *fakeClock, keys ...map[string]any) (*Verifier, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "jwks.json")
	writeJWKS(tb, path, keys...)
	v, err := NewVerifier(testSecret(tb), WithClock(clk.Now), WithJWKSFile(path),
		WithIssuer(testIssuer), WithAudience(testAudience))
	require.NoError(tb, err)
	return v, path
}

func TestVerifyJWKS(t *testing.T) {
	rsaKeys, ecKeys := testRSAKeys(), testECKeys()
	rsaKey, otherRSA := rsaKeys[0], rsaKeys[1]
	ecKey := ecKeys[0]
	secret := testSecret(t)
	clk := newFakeClock()
	v, _ := newJWKSVerifier(t, clk, rsaJWK(rsaKey, "rsa-1", "use", "sig", "alg", "RS256"), ecJWK(t, ecKey, "ec-1", "use", "sig"))

	claims := func(mutate func(*Claims)) *Claims {
		c := externalClaims(t)
		if mutate != nil {
			mutate(&c)
		}
		return &c
	}
	rs256 := func(mutate func(*Claims)) string {
		return signKID(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(mutate))
	}

	tests := []struct {
		name    string
		token   string
		wantErr error  // nil: accepted
		wantMsg string // PublicMessage of the error
	}{
		{name: "valid RS256", token: rs256(nil)},
		{name: "valid ES256", token: signKID(t, jwt.SigningMethodES256, ecKey, "ec-1", claims(nil))},
		{name: "valid HS256 with the shared secret", token: signKID(t, jwt.SigningMethodHS256, secret, "", claims(nil))},
		{
			name:    "expired",
			token:   rs256(func(c *Claims) { c.ExpiresAt = jwt.NewNumericDate(t0.Add(-time.Hour)) }),
			wantErr: ErrExpiredToken, wantMsg: "token expired",
		},
		{
			name:    "expired within skew",
			token:   rs256(func(c *Claims) { c.ExpiresAt = jwt.NewNumericDate(t0.Add(-DefaultLeeway + time.Second)) }),
			wantErr: nil,
		},
		{
			name:    "nbf in the future beyond skew",
			token:   rs256(func(c *Claims) { c.NotBefore = jwt.NewNumericDate(t0.Add(DefaultLeeway + time.Second)) }),
			wantErr: ErrNotYetValid, wantMsg: "invalid token: not yet valid",
		},
		{
			name:  "nbf in the future within skew",
			token: rs256(func(c *Claims) { c.NotBefore = jwt.NewNumericDate(t0.Add(DefaultLeeway - time.Second)) }),
		},
		{
			name:    "iat in the future beyond skew",
			token:   rs256(func(c *Claims) { c.IssuedAt = jwt.NewNumericDate(t0.Add(DefaultLeeway + time.Minute)) }),
			wantErr: ErrIssuedInFuture, wantMsg: "invalid token: issued in the future",
		},
		{
			name:    "wrong iss",
			token:   rs256(func(c *Claims) { c.Issuer = "https://evil.example.com/" }),
			wantErr: ErrWrongIssuer, wantMsg: "invalid token: wrong issuer",
		},
		{
			name:    "missing iss",
			token:   rs256(func(c *Claims) { c.Issuer = "" }),
			wantErr: ErrWrongIssuer, wantMsg: "invalid token: wrong issuer",
		},
		{
			name:    "wrong aud",
			token:   rs256(func(c *Claims) { c.Audience = jwt.ClaimStrings{"billing"} }),
			wantErr: ErrWrongAudience, wantMsg: "invalid token: wrong audience",
		},
		{
			name:    "missing aud",
			token:   rs256(func(c *Claims) { c.Audience = nil }),
			wantErr: ErrWrongAudience, wantMsg: "invalid token: wrong audience",
		},
		{
			name:  "aud array containing ours",
			token: rs256(func(c *Claims) { c.Audience = jwt.ClaimStrings{"billing", testAudience, "search"} }),
		},
		{
			name:    "aud array without ours",
			token:   rs256(func(c *Claims) { c.Audience = jwt.ClaimStrings{"billing", "search"} }),
			wantErr: ErrWrongAudience, wantMsg: "invalid token: wrong audience",
		},
		{
			name: "aud as a plain string",
			token: signKID(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", jwt.MapClaims{
				"sub": "agent-1", "iss": testIssuer, "aud": testAudience, "exp": t0.Add(time.Hour).Unix(),
				"roles": []string{"agent"}, "agents": []string{"agent-1"},
			}),
		},
		{
			name:    "missing exp",
			token:   rs256(func(c *Claims) { c.ExpiresAt = nil }),
			wantErr: ErrMissingExp, wantMsg: "invalid token: missing exp",
		},
		{
			name: "expired with wrong aud is invalid, not expired",
			token: rs256(func(c *Claims) {
				c.ExpiresAt = jwt.NewNumericDate(t0.Add(-time.Hour))
				c.Audience = jwt.ClaimStrings{"billing"}
			}),
			wantErr: ErrWrongAudience, wantMsg: "invalid token: expired, wrong audience",
		},
		{
			name:    "alg none",
			token:   signKID(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "rsa-1", claims(nil)),
			wantErr: ErrUnsupportedAlg, wantMsg: "invalid token: unsupported alg",
		},
		{
			name:    "HS256 signed with the RSA public key PEM",
			token:   signKID(t, jwt.SigningMethodHS256, rsaPublicPEM(t, rsaKey), "", claims(nil)),
			wantErr: ErrBadSignature, wantMsg: "invalid token: bad signature",
		},
		{
			name:    "HS256 signed with the RSA public key PEM naming the RSA kid",
			token:   signKID(t, jwt.SigningMethodHS256, rsaPublicPEM(t, rsaKey), "rsa-1", claims(nil)),
			wantErr: ErrUnsupportedAlg, wantMsg: "invalid token: unsupported alg",
		},
		{
			name:    "RS256 with unknown kid",
			token:   signKID(t, jwt.SigningMethodRS256, rsaKey, "rsa-404", claims(nil)),
			wantErr: ErrUnknownKey, wantMsg: "invalid token: unknown key",
		},
		{
			name:    "RS256 without kid while the JWKS holds two keys",
			token:   signKID(t, jwt.SigningMethodRS256, rsaKey, "", claims(nil)),
			wantErr: ErrUnknownKey, wantMsg: "invalid token: unknown key",
		},
		{
			name:    "RS256 tampered payload",
			token:   tamperKeep(t, rs256(nil)),
			wantErr: ErrBadSignature, wantMsg: "invalid token: bad signature",
		},
		{
			name:    "RS256 signed by another key under a known kid",
			token:   signKID(t, jwt.SigningMethodRS256, otherRSA, "rsa-1", claims(nil)),
			wantErr: ErrBadSignature, wantMsg: "invalid token: bad signature",
		},
		{
			name:    "ES256 whose kid points to an RSA key",
			token:   signKID(t, jwt.SigningMethodES256, ecKey, "rsa-1", claims(nil)),
			wantErr: ErrUnsupportedAlg, wantMsg: "invalid token: unsupported alg",
		},
		{
			name:    "RS256 whose kid points to an EC key",
			token:   signKID(t, jwt.SigningMethodRS256, rsaKey, "ec-1", claims(nil)),
			wantErr: ErrUnsupportedAlg, wantMsg: "invalid token: unsupported alg",
		},
		{
			name:    "RS384 with a JWKS key",
			token:   signKID(t, jwt.SigningMethodRS384, rsaKey, "rsa-1", claims(nil)),
			wantErr: ErrUnsupportedAlg, wantMsg: "invalid token: unsupported alg",
		},
		{
			name:    "PS256 with a JWKS key",
			token:   signKID(t, jwt.SigningMethodPS256, rsaKey, "rsa-1", claims(nil)),
			wantErr: ErrUnsupportedAlg, wantMsg: "invalid token: unsupported alg",
		},
		{
			name:    "kid that is not a string",
			token:   signHeader(t, jwt.SigningMethodRS256, rsaKey, map[string]any{"kid": 7}, claims(nil)),
			wantErr: ErrUnknownKey, wantMsg: "invalid token: unknown key",
		},
		{
			name:    "crit header",
			token:   signHeader(t, jwt.SigningMethodRS256, rsaKey, map[string]any{"kid": "rsa-1", "crit": []string{"exp"}}, claims(nil)),
			wantErr: ErrMalformed, wantMsg: "invalid token: malformed token",
		},
		{
			name:    "jwk header naming the attacker's own key",
			token:   signHeader(t, jwt.SigningMethodRS256, otherRSA, map[string]any{"kid": "rsa-1", "jwk": rsaJWK(otherRSA, "rsa-1")}, claims(nil)),
			wantErr: ErrBadSignature, wantMsg: "invalid token: bad signature",
		},
		{
			name:    "malformed",
			token:   "x.y.z",
			wantErr: ErrMalformed, wantMsg: "invalid token: malformed token",
		},
		{
			name:    "no role",
			token:   rs256(func(c *Claims) { c.Roles = nil }),
			wantErr: ErrBadClaims, wantMsg: "invalid token: invalid claims",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := v.Verify(tt.token)
			if tt.wantErr == nil {
				require.NoError(t, err)
				require.Equal(t, "agent-1", c.Subject)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.Nil(t, c)
			if !errors.Is(tt.wantErr, ErrExpiredToken) {
				require.ErrorIs(t, err, ErrInvalidToken)
				require.NotErrorIs(t, err, ErrExpiredToken)
			}
			msg := PublicMessage(err)
			require.Equal(t, tt.wantMsg, msg)
			for _, part := range strings.Split(tt.token, ".") {
				if len(part) > 8 {
					require.NotContains(t, msg, part)
					require.NotContains(t, err.Error(), part, "the log detail must not echo the token either")
				}
			}
		})
	}
}

// signHeader is signKID with arbitrary extra header members.
func signHeader(tb testing.TB, method jwt.SigningMethod, key any, header map[string]any, claims jwt.Claims) string {
	tb.Helper()
	tok := jwt.NewWithClaims(method, claims)
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	require.NoError(tb, err)
	return s
}

// tamperKeep swaps tok's payload for one granting admin, keeping the
// original header and signature.
func tamperKeep(tb testing.TB, tok string) string {
	tb.Helper()
	c := externalClaims(tb)
	c.Roles = []Role{RoleAdmin}
	payload, err := json.Marshal(&c)
	require.NoError(tb, err)
	parts := strings.Split(tok, ".")
	parts[1] = b64(payload)
	return strings.Join(parts, ".")
}

func TestVerifyWithoutJWKSRejectsAsymmetric(t *testing.T) {
	_, v := newPair(t, testSecret(t), newFakeClock())
	c := validClaims(t)
	for _, tok := range []string{
		signKID(t, jwt.SigningMethodRS256, testRSAKeys()[0], "", &c),
		signKID(t, jwt.SigningMethodES256, testECKeys()[0], "", &c),
	} {
		_, err := v.Verify(tok)
		require.ErrorIs(t, err, ErrUnsupportedAlg)
		require.Equal(t, "invalid token: unsupported alg", PublicMessage(err))
	}
}

func TestVerifySingleKeyWithoutKID(t *testing.T) {
	clk := newFakeClock()
	key := testRSAKeys()[0]
	v, _ := newJWKSVerifier(t, clk, rsaJWK(key, ""))
	c := externalClaims(t)

	_, err := v.Verify(signKID(t, jwt.SigningMethodRS256, key, "", &c))
	require.NoError(t, err, "the only key is used for a token without kid")

	_, err = v.Verify(signKID(t, jwt.SigningMethodRS256, key, "some-kid", &c))
	require.ErrorIs(t, err, ErrUnknownKey, "a kid must match; the key has none")
}

func TestVerifyInternalTokensPassIssuerAndAudience(t *testing.T) {
	clk := newFakeClock()
	v, _ := newJWKSVerifier(t, clk, rsaJWK(testRSAKeys()[0], "rsa-1"))

	plain, err := NewSigner(testSecret(t), WithSignerClock(clk.Now))
	require.NoError(t, err)
	tok, err := plain.Mint("memoryd/mirror", []Role{RoleService}, []string{AllAgents}, time.Minute)
	require.NoError(t, err)
	_, err = v.Verify(tok)
	require.ErrorIs(t, err, ErrWrongIssuer, "a token without iss/aud fails once they are configured")
	require.ErrorIs(t, err, ErrWrongAudience)

	s, err := NewSigner(testSecret(t), WithSignerClock(clk.Now), WithSignerIssuer(testIssuer), WithSignerAudience(testAudience))
	require.NoError(t, err)
	tok, err = NewServiceCredentials(s, "memoryd/search-index").Token()
	require.NoError(t, err)
	c, err := v.Verify(tok)
	require.NoError(t, err)
	require.Equal(t, testIssuer, c.Issuer)
	require.Equal(t, jwt.ClaimStrings{testAudience}, c.Audience)
}

func TestJWKSRotation(t *testing.T) {
	clk := newFakeClock()
	keyA, keyB := testRSAKeys()[0], testRSAKeys()[2]
	keyC := testECKeys()[1]
	v, path := newJWKSVerifier(t, clk, rsaJWK(keyA, "a"))
	c := externalClaims(t)
	tokA := signKID(t, jwt.SigningMethodRS256, keyA, "a", &c)
	tokB := signKID(t, jwt.SigningMethodRS256, keyB, "b", &c)
	tokC := signKID(t, jwt.SigningMethodES256, keyC, "c", &c)
	verify := func(tok string) error {
		_, err := v.Verify(tok)
		return err
	}

	require.NoError(t, verify(tokA))
	require.ErrorIs(t, verify(tokB), ErrUnknownKey)

	// A new key is added: the first token naming it after a second makes
	// the verifier look at the file again.
	writeJWKS(t, path, rsaJWK(keyA, "a"), rsaJWK(keyB, "b"))
	require.ErrorIs(t, verify(tokB), ErrUnknownKey, "unknown kids re-read the file at most once a second")
	clk.Advance(jwksUnknownKIDRefresh)
	require.NoError(t, verify(tokB), "the new key is picked up")
	require.NoError(t, verify(tokA), "the old key still works")

	// The old key is removed: known kids only trigger the periodic check.
	writeJWKS(t, path, rsaJWK(keyB, "b"))
	clk.Advance(DefaultJWKSRefresh - time.Second)
	require.NoError(t, verify(tokA), "still cached before the refresh interval")
	clk.Advance(time.Second)
	require.ErrorIs(t, verify(tokA), ErrUnknownKey, "removed key is gone after the refresh interval")
	require.NoError(t, verify(tokB))

	// A broken file keeps the keys in use, and so does a missing one.
	require.NoError(t, os.WriteFile(path, []byte(`{"keys": [`), 0o644))
	clk.Advance(DefaultJWKSRefresh)
	require.NoError(t, verify(tokB))
	writeJWKS(t, path, rsaJWK(keyB, "b", "use", "enc"))
	clk.Advance(DefaultJWKSRefresh)
	require.NoError(t, verify(tokB), "a file without usable keys is not applied")
	require.NoError(t, os.Remove(path))
	clk.Advance(DefaultJWKSRefresh)
	require.NoError(t, verify(tokB))

	// Rotation to an EC key, replaced through a rename as tools do.
	tmp := path + ".tmp"
	writeJWKS(t, tmp, ecJWK(t, keyC, "c"))
	require.NoError(t, os.Rename(tmp, path))
	clk.Advance(DefaultJWKSRefresh)
	require.NoError(t, verify(tokC))
	require.ErrorIs(t, verify(tokB), ErrUnknownKey)
}

func TestJWKSConcurrentVerifyAndRotate(t *testing.T) {
	clk := newFakeClock()
	keyA, keyB := testRSAKeys()[0], testRSAKeys()[2]
	v, path := newJWKSVerifier(t, clk, rsaJWK(keyA, "a"), rsaJWK(keyB, "b"))
	c := externalClaims(t)
	tokA := signKID(t, jwt.SigningMethodRS256, keyA, "a", &c)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := v.Verify(tokA)
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 20 {
		// Key a stays in every version; key b comes and goes.
		if i%2 == 0 {
			writeJWKS(t, path, rsaJWK(keyA, "a"))
		} else {
			writeJWKS(t, path, rsaJWK(keyA, "a"), rsaJWK(keyB, "b"))
		}
		clk.Advance(DefaultJWKSRefresh)
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
}

func TestNewVerifierJWKSErrors(t *testing.T) {
	dir := t.TempDir()
	rsaKey := testRSAKeys()[0]
	tests := []struct {
		name    string
		content []byte // nil: the file does not exist
		opts    []VerifierOption
		wantErr string
	}{
		{name: "missing file", wantErr: "no such file"},
		{name: "not JSON", content: []byte("-----BEGIN PUBLIC KEY-----"), wantErr: "invalid JSON"},
		{name: "no keys member", content: []byte(`{"kty":"RSA"}`), wantErr: `missing "keys" array`},
		{name: "empty set", content: jwksJSON(t), wantErr: "no keys"},
		{name: "only encryption keys", content: jwksJSON(t, rsaJWK(rsaKey, "e1", "use", "enc")), wantErr: `no usable keys (key 0 (kid "e1"): use "enc" is not sig)`},
		{name: "skew above maximum", content: jwksJSON(t, rsaJWK(rsaKey, "k")), opts: []VerifierOption{WithLeeway(MaxLeeway + time.Second)}, wantErr: "clock skew 5m1s is above the maximum of 5m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".json")
			if tt.content != nil {
				require.NoError(t, os.WriteFile(path, tt.content, 0o644))
			}
			_, err := NewVerifier(testSecret(t), append([]VerifierOption{WithJWKSFile(path)}, tt.opts...)...)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestParseJWKS(t *testing.T) {
	rsaKey, ecKey := testRSAKeys()[0], testECKeys()[0]
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	p384pt, err := p384.PublicKey.Bytes()
	require.NoError(t, err)
	ecPt, err := ecKey.PublicKey.Bytes()
	require.NoError(t, err)
	offCurve := append([]byte(nil), ecPt[33:]...)
	offCurve[31] ^= 1

	tests := []struct {
		name        string
		data        []byte
		wantKIDs    []string
		wantSkipped int
		wantErr     string
	}{
		{name: "RSA and EC", data: jwksJSON(t, rsaJWK(rsaKey, "r"), ecJWK(t, ecKey, "e")), wantKIDs: []string{"r", "e"}},
		{name: "padded base64 tolerated", data: jwksJSON(t, rsaJWK(rsaKey, "r", "e", "AQAB===")), wantKIDs: []string{"r"}},
		{
			name: "unusable entries skipped",
			data: jwksJSON(t,
				rsaJWK(rsaKey, "enc", "use", "enc"),
				rsaJWK(rsaKey, "ops", "key_ops", []string{"encrypt"}),
				rsaJWK(rsaKey, "rs512", "alg", "RS512"),
				ecJWK(t, ecKey, "es384", "alg", "ES384"),
				map[string]any{"kty": "oct", "kid": "hmac", "k": b64([]byte("shared"))},
				map[string]any{"kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": b64(make([]byte, 32))},
				map[string]any{"kty": "EC", "kid": "p384", "crv": "P-384", "x": b64(p384pt[1:49]), "y": b64(p384pt[49:])},
				rsaJWK(rsaKey, "ok", "key_ops", []string{"verify"}, "alg", "RS256", "use", "sig"),
			),
			wantKIDs: []string{"ok"}, wantSkipped: 7,
		},
		{name: "not an object", data: []byte(`[]`), wantErr: "invalid JSON"},
		{name: "trailing data", data: append(jwksJSON(t, rsaJWK(rsaKey, "r")), []byte(` {}`)...), wantErr: "trailing data"},
		{name: "keys not an array", data: []byte(`{"keys": {}}`), wantErr: "invalid JSON"},
		{name: "missing kty", data: []byte(`{"keys": [{"kid": "x"}]}`), wantErr: `key 0 (kid "x"): missing kty`},
		{name: "RSA missing n", data: jwksJSON(t, rsaJWK(rsaKey, "r", "n", "")), wantErr: "missing n"},
		{name: "RSA n not base64url", data: jwksJSON(t, rsaJWK(rsaKey, "r", "n", "!!!")), wantErr: "n is not base64url"},
		{name: "RSA too small", data: jwksJSON(t, rsaJWK(small, "r")), wantErr: "RSA modulus has 1024 bits, need at least 2048"},
		{name: "RSA even exponent", data: jwksJSON(t, rsaJWK(rsaKey, "r", "e", b64([]byte{2}))), wantErr: "RSA exponent"},
		{name: "RSA private key published", data: jwksJSON(t, rsaJWK(rsaKey, "r", "d", b64(rsaKey.D.Bytes()))), wantErr: "private key material"},
		{name: "EC off the curve", data: jwksJSON(t, ecJWK(t, ecKey, "e", "y", b64(offCurve))), wantErr: "invalid P-256 point"},
		{name: "EC short coordinate", data: jwksJSON(t, ecJWK(t, ecKey, "e", "x", b64(ecPt[1:32]))), wantErr: "must be 32 bytes"},
		{name: "duplicate kid", data: jwksJSON(t, rsaJWK(rsaKey, "k"), ecJWK(t, ecKey, "k")), wantErr: `key 1 (kid "k"): duplicate kid`},
		{name: "only an HMAC key", data: jwksJSON(t, map[string]any{"kty": "oct", "k": b64([]byte("shared"))}), wantErr: `no usable keys (key 0: kty "oct" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := ParseJWKS(tt.data)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Nil(t, set)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantKIDs, set.KeyIDs())
			require.Equal(t, len(tt.wantKIDs), set.Len())
			require.Len(t, set.Skipped(), tt.wantSkipped)
		})
	}
}

func TestInterceptorsJWKSRejections(t *testing.T) {
	clk := newFakeClock()
	key := testRSAKeys()[0]
	v, _ := newJWKSVerifier(t, clk, rsaJWK(key, "k"))
	addr, _ := startHealthServer(t, v, nil)

	sign := func(mutate func(*Claims)) string {
		c := externalClaims(t)
		mutate(&c)
		return signKID(t, jwt.SigningMethodRS256, key, "k", &c)
	}
	tests := []struct {
		name       string
		token      string
		wantReason string // "" accepted
		wantMsg    string
	}{
		{name: "valid", token: sign(func(*Claims) {})},
		{name: "expired", token: sign(func(c *Claims) { c.ExpiresAt = jwt.NewNumericDate(t0.Add(-time.Hour)) }), wantReason: ReasonTokenExpired, wantMsg: "token expired"},
		{name: "wrong audience", token: sign(func(c *Claims) { c.Audience = jwt.ClaimStrings{"x"} }), wantReason: ReasonUnauthenticated, wantMsg: "invalid token: wrong audience"},
		{name: "wrong issuer", token: sign(func(c *Claims) { c.Issuer = "x" }), wantReason: ReasonUnauthenticated, wantMsg: "invalid token: wrong issuer"},
		{name: "not yet valid", token: sign(func(c *Claims) { c.NotBefore = jwt.NewNumericDate(t0.Add(time.Hour)) }), wantReason: ReasonUnauthenticated, wantMsg: "invalid token: not yet valid"},
		{name: "unknown key", token: signKID(t, jwt.SigningMethodRS256, key, "nope", ptr(externalClaims(t))), wantReason: ReasonUnauthenticated, wantMsg: "invalid token: unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := dialHealth(t, addr, grpc.WithPerRPCCredentials(StaticToken(tt.token)))
			_, err := client.Check(callCtx(t), &healthpb.HealthCheckRequest{})
			if tt.wantReason == "" {
				require.NoError(t, err)
				return
			}
			requireUnauthenticated(t, err, tt.wantReason)
			require.Equal(t, tt.wantMsg, status.Convert(err).Message())
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestJWKSReloadLogging(t *testing.T) {
	clk := newFakeClock()
	key := testRSAKeys()[0]
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, rsaJWK(key, "a"))
	var logs bytes.Buffer
	v, err := NewVerifier(testSecret(t), WithClock(clk.Now), WithJWKSFile(path),
		WithJWKSRefresh(time.Minute), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	require.Contains(t, logs.String(), "auth: jwks loaded")
	c := externalClaims(t)
	tok := signKID(t, jwt.SigningMethodRS256, key, "a", &c)

	require.NoError(t, os.WriteFile(path, []byte("{"), 0o644))
	for range 3 {
		clk.Advance(time.Minute)
		_, err = v.Verify(tok)
		require.NoError(t, err)
	}
	require.Equal(t, 1, strings.Count(logs.String(), "jwks reload failed"), "a failure is logged once, not at every check")

	writeJWKS(t, path, rsaJWK(key, "a"))
	clk.Advance(time.Minute)
	_, err = v.Verify(tok)
	require.NoError(t, err)
	require.Contains(t, logs.String(), "back to the keys in use")

	writeJWKS(t, path, rsaJWK(key, "a"), rsaJWK(testRSAKeys()[1], "b"))
	clk.Advance(time.Minute - time.Second)
	_, err = v.Verify(tok)
	require.NoError(t, err)
	require.NotContains(t, logs.String(), "jwks reloaded", "WithJWKSRefresh sets the interval")
	clk.Advance(time.Second)
	_, err = v.Verify(tok)
	require.NoError(t, err)
	require.Contains(t, logs.String(), "jwks reloaded")
	require.NotContains(t, logs.String(), b64(key.N.Bytes())[:16], "keys themselves are not logged")
}

func TestPublicMessage(t *testing.T) {
	require.Equal(t, "missing bearer token", PublicMessage(ErrMissingToken))
	require.Equal(t, "token expired", PublicMessage(fmt.Errorf("wrapped: %w", ErrExpiredToken)))
	require.Equal(t, "invalid token", PublicMessage(errors.New("anything else")))
}
