package auth

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Sentinel errors returned (wrapped) by [Verifier.Verify]; test with
// errors.Is. They are distinct so callers can tell "log in again" apart
// from "refresh your token".
var (
	// ErrMissingToken means no token was presented at all.
	ErrMissingToken = errors.New("auth: missing token")
	// ErrInvalidToken means the token is malformed, badly signed, uses a
	// disallowed algorithm, is not yet valid, or has invalid claims.
	ErrInvalidToken = errors.New("auth: invalid token")
	// ErrExpiredToken means the token was genuine and well-formed but its
	// exp (plus leeway) has passed.
	ErrExpiredToken = errors.New("auth: token expired")
)

// DefaultLeeway is the clock skew tolerated on exp/nbf/iat. Services run on
// different hosts; a few seconds of drift must not fail requests.
const DefaultLeeway = 30 * time.Second

// Verifier checks tokens presented by callers. It is safe for concurrent
// use.
//
// Keys are looked up per signing algorithm (see keyFor), which today only
// knows HS256; an asymmetric RS256/JWKS source can be added as another
// VerifierOption without changing Verify's contract.
type Verifier struct {
	hmacKey []byte
	now     func() time.Time
	leeway  time.Duration
}

// VerifierOption configures a [Verifier].
type VerifierOption func(*Verifier)

// WithClock sets the time source used for exp/nbf/iat checks; tests inject
// a fake clock here instead of sleeping.
func WithClock(now func() time.Time) VerifierOption {
	return func(v *Verifier) {
		if now != nil {
			v.now = now
		}
	}
}

// WithLeeway overrides [DefaultLeeway]. Negative values are treated as 0.
func WithLeeway(d time.Duration) VerifierOption {
	return func(v *Verifier) { v.leeway = max(d, 0) }
}

// NewVerifier returns a Verifier for HS256 tokens signed with secret. Like
// [NewSigner] it rejects secrets shorter than [MinSecretLen]. The secret is
// copied.
func NewVerifier(secret []byte, opts ...VerifierOption) (*Verifier, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("auth: verification secret must be at least %d bytes", MinSecretLen)
	}
	v := &Verifier{
		hmacKey: append([]byte(nil), secret...),
		now:     time.Now,
		leeway:  DefaultLeeway,
	}
	for _, o := range opts {
		o(v)
	}
	return v, nil
}

// Verify checks token's signature and claims and returns the claims.
//
// Only HS256 is accepted: "none" and every other algorithm (including other
// HMAC variants) are rejected before any key is used, which closes
// algorithm-confusion attacks. exp is mandatory; nbf and iat are checked when
// present. Errors wrap [ErrMissingToken], [ErrExpiredToken] or
// [ErrInvalidToken]; their text carries details meant for server logs, not
// for callers.
func (v *Verifier) Verify(token string) (*Claims, error) {
	if token == "" {
		return nil, ErrMissingToken
	}
	p := jwt.NewParser(
		jwt.WithValidMethods(v.algorithms()),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(v.leeway),
		jwt.WithTimeFunc(v.now),
	)
	claims := &Claims{}
	if _, err := p.ParseWithClaims(token, claims, v.keyFor); err != nil {
		// Only call it "expired" when expiry is the sole problem: telling a
		// client to refresh a token that is broken in other ways would just
		// make it retry with the same broken claims.
		if errors.Is(err, jwt.ErrTokenExpired) && !errors.Is(err, jwt.ErrTokenNotValidYet) &&
			!errors.Is(err, jwt.ErrTokenUsedBeforeIssued) && claims.Validate() == nil {
			return nil, fmt.Errorf("%w: %w", ErrExpiredToken, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	return claims, nil
}

// algorithms lists the JWS "alg" values this Verifier accepts.
func (v *Verifier) algorithms() []string {
	return []string{jwt.SigningMethodHS256.Alg()}
}

// keyFor returns the verification key for t. It re-checks the algorithm
// even though the parser already filtered it, so that adding an algorithm to
// algorithms() can never hand the HMAC secret to a non-HMAC method.
func (v *Verifier) keyFor(t *jwt.Token) (any, error) {
	if t.Method != jwt.SigningMethodHS256 {
		return nil, fmt.Errorf("unexpected signing method %q", t.Method.Alg())
	}
	return v.hmacKey, nil
}
