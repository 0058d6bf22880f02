package auth

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

func TestNewSignerVerifierRejectShortSecret(t *testing.T) {
	short := []byte(strings.Repeat("x", MinSecretLen-1))
	_, err := NewSigner(short)
	require.Error(t, err)
	_, err = NewVerifier(short)
	require.Error(t, err)
}

func TestMintVerifyRoundTrip(t *testing.T) {
	clk := newFakeClock()
	s, v := newPair(t, testSecret(t), clk)

	tok, err := s.Mint("reviewer-7", []Role{RoleReviewer, RoleAgent}, []string{"a1", "a2"}, 10*time.Minute)
	require.NoError(t, err)

	c, err := v.Verify(tok)
	require.NoError(t, err)
	require.Equal(t, "reviewer-7", c.Subject)
	require.Equal(t, []Role{RoleReviewer, RoleAgent}, c.Roles)
	require.Equal(t, []string{"a1", "a2"}, c.Agents)
	require.Equal(t, t0, c.IssuedAt.UTC())
	require.Equal(t, t0, c.NotBefore.UTC())
	require.Equal(t, t0.Add(10*time.Minute), c.ExpiresAt.UTC())
	require.True(t, c.HasRole(RoleReviewer))
	require.True(t, c.CanAccessAgent("a2"))
	require.False(t, c.CanAccessAgent("a3"))
}

func TestSignRoundTrip(t *testing.T) {
	clk := newFakeClock()
	s, v := newPair(t, testSecret(t), clk)
	in := validClaims(t)
	in.Issuer = "memoryd"

	tok, err := s.Sign(in)
	require.NoError(t, err)
	got, err := v.Verify(tok)
	require.NoError(t, err)
	require.Equal(t, in.Subject, got.Subject)
	require.Equal(t, in.Issuer, got.Issuer)
	require.Equal(t, in.Roles, got.Roles)
	require.Equal(t, in.Agents, got.Agents)
}

func TestSignRejectsInvalidClaims(t *testing.T) {
	s, _ := newPair(t, testSecret(t), newFakeClock())
	c := validClaims(t)
	c.Roles = []Role{"root"}
	_, err := s.Sign(c)
	require.Error(t, err)

	_, err = s.Mint("", []Role{RoleAgent}, nil, time.Minute)
	require.Error(t, err, "missing sub")
	_, err = s.Mint("x", nil, nil, time.Minute)
	require.Error(t, err, "no roles")
	_, err = s.Mint("x", []Role{RoleAgent}, nil, 0)
	require.Error(t, err, "zero ttl")
}

func TestVerifyTiming(t *testing.T) {
	const ttl = 5 * time.Minute
	tests := []struct {
		name    string
		advance time.Duration // from mint time to verify time
		wantErr error
	}{
		{name: "fresh", advance: 0},
		{name: "just before exp", advance: ttl - time.Second},
		{name: "expired within leeway", advance: ttl + DefaultLeeway - time.Second},
		{name: "expired at leeway boundary", advance: ttl + DefaultLeeway, wantErr: ErrExpiredToken},
		{name: "expired beyond leeway", advance: ttl + time.Hour, wantErr: ErrExpiredToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			s, v := newPair(t, testSecret(t), clk)
			tok, err := s.Mint("svc", []Role{RoleService}, []string{"*"}, ttl)
			require.NoError(t, err)

			clk.Advance(tt.advance)
			c, err := v.Verify(tok)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.NotErrorIs(t, err, ErrInvalidToken)
				require.Nil(t, c)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "svc", c.Subject)
		})
	}
}

func TestVerifyCustomLeeway(t *testing.T) {
	clk := newFakeClock()
	s, err := NewSigner(testSecret(t), WithSignerClock(clk.Now))
	require.NoError(t, err)
	v, err := NewVerifier(testSecret(t), WithClock(clk.Now), WithLeeway(0))
	require.NoError(t, err)

	tok, err := s.Mint("svc", []Role{RoleService}, nil, time.Minute)
	require.NoError(t, err)
	clk.Advance(time.Minute)
	_, err = v.Verify(tok)
	require.ErrorIs(t, err, ErrExpiredToken)
}

func TestVerifyRejects(t *testing.T) {
	secret := testSecret(t)
	otherSecret := []byte(strings.Repeat("z", 48))
	withClaims := func(mutate func(*Claims)) jwt.Claims {
		c := validClaims(t)
		mutate(&c)
		return &c
	}
	noop := func(*Claims) {}

	tests := []struct {
		name    string
		token   string
		wantErr error
	}{
		{name: "empty", token: "", wantErr: ErrMissingToken},
		{name: "garbage", token: "not-a-jwt", wantErr: ErrInvalidToken},
		{name: "three garbage segments", token: "a.b.c", wantErr: ErrInvalidToken},
		{
			name:    "wrong secret",
			token:   rawSign(t, jwt.SigningMethodHS256, otherSecret, withClaims(noop)),
			wantErr: ErrInvalidToken,
		},
		{
			name:    "alg none",
			token:   rawSign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, withClaims(noop)),
			wantErr: ErrInvalidToken,
		},
		{
			name:    "alg none with stripped signature of a real token",
			token:   noneHeader(t) + "." + strings.Split(rawSign(t, jwt.SigningMethodHS256, secret, withClaims(noop)), ".")[1] + ".",
			wantErr: ErrInvalidToken,
		},
		{
			name:    "HS512 with the right secret",
			token:   rawSign(t, jwt.SigningMethodHS512, secret, withClaims(noop)),
			wantErr: ErrInvalidToken,
		},
		{
			name:    "HS384 with the right secret",
			token:   rawSign(t, jwt.SigningMethodHS384, secret, withClaims(noop)),
			wantErr: ErrInvalidToken,
		},
		{
			name:    "tampered payload",
			token:   tamper(t, rawSign(t, jwt.SigningMethodHS256, secret, withClaims(noop))),
			wantErr: ErrInvalidToken,
		},
		{
			name: "nbf in future beyond leeway",
			token: rawSign(t, jwt.SigningMethodHS256, secret, withClaims(func(c *Claims) {
				c.NotBefore = jwt.NewNumericDate(t0.Add(DefaultLeeway + time.Minute))
			})),
			wantErr: ErrInvalidToken,
		},
		{
			name: "iat in future beyond leeway",
			token: rawSign(t, jwt.SigningMethodHS256, secret, withClaims(func(c *Claims) {
				c.IssuedAt = jwt.NewNumericDate(t0.Add(DefaultLeeway + time.Minute))
			})),
			wantErr: ErrInvalidToken,
		},
		{
			name:    "missing exp",
			token:   rawSign(t, jwt.SigningMethodHS256, secret, withClaims(func(c *Claims) { c.ExpiresAt = nil })),
			wantErr: ErrInvalidToken,
		},
		{
			name:    "missing sub",
			token:   rawSign(t, jwt.SigningMethodHS256, secret, withClaims(func(c *Claims) { c.Subject = "" })),
			wantErr: ErrInvalidToken,
		},
		{
			name:    "unknown role",
			token:   rawSign(t, jwt.SigningMethodHS256, secret, withClaims(func(c *Claims) { c.Roles = []Role{"superuser"} })),
			wantErr: ErrInvalidToken,
		},
		{
			name:    "no roles",
			token:   rawSign(t, jwt.SigningMethodHS256, secret, withClaims(func(c *Claims) { c.Roles = nil })),
			wantErr: ErrInvalidToken,
		},
		{
			// Expired and broken: telling the client to refresh would not help.
			name: "expired with unknown role is invalid, not expired",
			token: rawSign(t, jwt.SigningMethodHS256, secret, withClaims(func(c *Claims) {
				c.ExpiresAt = jwt.NewNumericDate(t0.Add(-time.Hour))
				c.Roles = []Role{"superuser"}
			})),
			wantErr: ErrInvalidToken,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, v := newPair(t, secret, newFakeClock())
			c, err := v.Verify(tt.token)
			require.ErrorIs(t, err, tt.wantErr)
			require.Nil(t, c)
		})
	}
}

// noneHeader is the base64url header {"alg":"none","typ":"JWT"}.
func noneHeader(tb testing.TB) string {
	tb.Helper()
	tok := rawSign(tb, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{})
	return strings.Split(tok, ".")[0]
}

// tamper swaps the payload of tok for one granting admin, keeping the
// original header and signature.
func tamper(tb testing.TB, tok string) string {
	tb.Helper()
	c := validClaims(tb)
	c.Roles = []Role{RoleAdmin}
	forged := rawSign(tb, jwt.SigningMethodHS256, []byte("irrelevant-key-irrelevant-key-xx"), &c)
	parts := strings.Split(tok, ".")
	parts[1] = strings.Split(forged, ".")[1]
	return strings.Join(parts, ".")
}

// A token verified once is remembered, but its time claims are checked on
// every use, and callers get their own copy of the claims.
func TestVerifiedTokenCacheRechecksTime(t *testing.T) {
	clk := newFakeClock()
	s, v := newPair(t, testSecret(t), clk)
	tok, err := s.Mint("svc", []Role{RoleService}, []string{"*"}, time.Minute)
	require.NoError(t, err)
	c, err := v.Verify(tok)
	require.NoError(t, err)
	c.Subject = "changed by a caller"
	again, err := v.Verify(tok)
	require.NoError(t, err)
	require.Equal(t, "svc", again.Subject)

	clk.Advance(time.Minute + DefaultLeeway)
	_, err = v.Verify(tok)
	require.ErrorIs(t, err, ErrExpiredToken)
}
