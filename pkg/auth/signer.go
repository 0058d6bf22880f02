package auth

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Signer mints HS256 tokens with the shared secret. It is safe for
// concurrent use.
type Signer struct {
	key      []byte
	now      func() time.Time
	issuer   string
	audience string
}

// SignerOption configures a [Signer].
type SignerOption func(*Signer)

// WithSignerClock sets the clock used to stamp iat/nbf/exp in [Signer.Mint]
// (and by [TokenCredentials] to decide when to refresh). Tests inject a fake
// clock here instead of sleeping.
func WithSignerClock(now func() time.Time) SignerOption {
	return func(s *Signer) {
		if now != nil {
			s.now = now
		}
	}
}

// WithSignerIssuer sets the iss claim of tokens minted by [Signer.Mint] and
// [TokenCredentials], so they pass a [Verifier] configured with
// [WithIssuer]. "" leaves iss out.
func WithSignerIssuer(iss string) SignerOption {
	return func(s *Signer) { s.issuer = iss }
}

// WithSignerAudience sets the aud claim of tokens minted by [Signer.Mint]
// and [TokenCredentials], so they pass a [Verifier] configured with
// [WithAudience]. "" leaves aud out.
func WithSignerAudience(aud string) SignerOption {
	return func(s *Signer) { s.audience = aud }
}

// NewSigner returns a Signer using secret as the HMAC key. It rejects
// secrets shorter than [MinSecretLen] so a misconfigured key cannot produce
// easily forgeable tokens. The secret is copied.
func NewSigner(secret []byte, opts ...SignerOption) (*Signer, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("auth: signing secret must be at least %d bytes", MinSecretLen)
	}
	s := &Signer{key: append([]byte(nil), secret...), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Sign signs c as-is with HS256. The claims are validated first (see
// [Claims.Validate]) so a token that every Verifier would reject is never
// handed out.
func (s *Signer) Sign(c Claims) (string, error) {
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("auth: refusing to sign: %w", err)
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, &c).SignedString(s.key)
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	return tok, nil
}

// Mint issues a token for sub valid for ttl from now (per the Signer's
// clock). iat and nbf are set to now and exp to now+ttl, truncated to whole
// seconds as JWT NumericDates are; iss and aud are the Signer's
// ([WithSignerIssuer], [WithSignerAudience]).
func (s *Signer) Mint(sub string, roles []Role, agents []string, ttl time.Duration) (string, error) {
	_, tok, err := s.mint(sub, roles, agents, ttl)
	return tok, err
}

// mint is Mint that also reports the expiry, so callers that cache tokens
// need not re-parse them.
func (s *Signer) mint(sub string, roles []Role, agents []string, ttl time.Duration) (time.Time, string, error) {
	if ttl <= 0 {
		return time.Time{}, "", errors.New("auth: token ttl must be positive")
	}
	now := s.now().Truncate(time.Second)
	exp := now.Add(ttl)
	c := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    s.issuer,
			Subject:   sub,
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
		Roles:  append([]Role(nil), roles...),
		Agents: append([]string(nil), agents...),
	}
	if s.audience != "" {
		c.Audience = jwt.ClaimStrings{s.audience}
	}
	tok, err := s.Sign(c)
	if err != nil {
		return time.Time{}, "", err
	}
	return exp, tok, nil
}
