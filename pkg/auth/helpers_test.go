package auth

import (
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// t0 is an arbitrary fixed instant so tests never depend on the wall clock.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeClock is a manually advanced clock, safe for use from server
// goroutines.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func testSecret(tb testing.TB) []byte {
	tb.Helper()
	return []byte("0123456789abcdef0123456789abcdef-test-secret")
}

// newPair returns a Signer and Verifier sharing secret and clock.
func newPair(tb testing.TB, secret []byte, clk *fakeClock) (*Signer, *Verifier) {
	tb.Helper()
	s, err := NewSigner(secret, WithSignerClock(clk.Now))
	require.NoError(tb, err)
	v, err := NewVerifier(secret, WithClock(clk.Now))
	require.NoError(tb, err)
	return s, v
}

// rawSign signs arbitrary claims with an arbitrary method, bypassing
// Signer's validation, to forge the tokens a Verifier must reject.
func rawSign(tb testing.TB, method jwt.SigningMethod, key any, claims jwt.Claims) string {
	tb.Helper()
	tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
	require.NoError(tb, err)
	return tok
}

// validClaims returns claims that pass validation at t0.
func validClaims(tb testing.TB) Claims {
	tb.Helper()
	return Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   "agent-1",
			IssuedAt:  jwt.NewNumericDate(t0),
			NotBefore: jwt.NewNumericDate(t0),
			ExpiresAt: jwt.NewNumericDate(t0.Add(time.Hour)),
		},
		Roles:  []Role{RoleAgent},
		Agents: []string{"agent-1"},
	}
}
