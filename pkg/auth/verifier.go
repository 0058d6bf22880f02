package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/garden-bloom/memory/pkg/lru"
)

// Sentinel errors returned (wrapped) by [Verifier.Verify]; test with
// errors.Is. They are distinct so callers can tell "log in again" apart
// from "refresh your token".
var (
	// ErrMissingToken means no token was presented at all.
	ErrMissingToken = errors.New("auth: missing token")
	// ErrInvalidToken means the token is malformed, badly signed, uses a
	// disallowed algorithm or key, is not yet valid, or has invalid claims.
	// One or more of the Err* causes below say which.
	ErrInvalidToken = errors.New("auth: invalid token")
	// ErrExpiredToken means the token was genuine and well-formed but its
	// exp (plus leeway) has passed.
	ErrExpiredToken = errors.New("auth: token expired")
)

// Causes of a rejection, wrapped by [Verifier.Verify] errors next to
// [ErrInvalidToken]. Their texts are what [PublicMessage] tells callers, so
// they name the problem and never echo any part of the token.
var (
	// ErrMalformed: not a well-formed JWS compact token.
	ErrMalformed = errors.New("malformed token")
	// ErrUnsupportedAlg: "none", an algorithm this Verifier does not
	// accept, or an algorithm that does not fit the key the token names.
	ErrUnsupportedAlg = errors.New("unsupported alg")
	// ErrUnknownKey: the kid names no key of the JWKS (or is missing while
	// the JWKS holds several keys).
	ErrUnknownKey = errors.New("unknown key")
	// ErrBadSignature: the signature does not verify with the chosen key.
	ErrBadSignature = errors.New("bad signature")
	// ErrMissingExp: the token has no exp claim.
	ErrMissingExp = errors.New("missing exp")
	// ErrNotYetValid: nbf is later than now plus the clock skew.
	ErrNotYetValid = errors.New("not yet valid")
	// ErrIssuedInFuture: iat is later than now plus the clock skew.
	ErrIssuedInFuture = errors.New("issued in the future")
	// ErrWrongIssuer: iss differs from the configured issuer.
	ErrWrongIssuer = errors.New("wrong issuer")
	// ErrWrongAudience: aud does not contain the configured audience.
	ErrWrongAudience = errors.New("wrong audience")
	// ErrBadClaims: missing sub, no roles or an unknown role.
	ErrBadClaims = errors.New("invalid claims")
	// errExpired is the cause "exp has passed" among others; on its own it
	// becomes [ErrExpiredToken] instead.
	errExpired = errors.New("expired")
)

// DefaultLeeway is the clock skew tolerated on exp/nbf/iat. Services run on
// different hosts; a few seconds of drift must not fail requests.
const DefaultLeeway = 30 * time.Second

// MaxLeeway is the largest clock skew a [Verifier] accepts: more would keep
// expired tokens alive for too long.
const MaxLeeway = 5 * time.Minute

// Verifier checks tokens presented by callers. It is safe for concurrent
// use.
//
// HS256 tokens are checked with the shared secret. When a JWKS file is
// configured ([WithJWKSFile]), RS256 and ES256 tokens are also accepted,
// checked with the public key their kid names; the file is re-read when it
// changes so keys rotate without a restart.
type Verifier struct {
	hmacKey  []byte
	now      func() time.Time
	leeway   time.Duration
	issuer   string
	audience string
	logger   *slog.Logger

	jwksPath    string
	jwksRefresh time.Duration
	jwks        *jwksSource // nil without a JWKS file

	// verified remembers tokens that passed, so the signature and JSON of a
	// token presented on every call are checked once; the time-dependent
	// claims are checked again on every use.
	verified *lru.Cache[string, verifiedToken]
}

// verifiedToken is a token that passed, with the JWKS key set in effect then
// (nil without JWKS): a reloaded set means verifying it again, so a key
// taken out of the file stops working at once.
type verifiedToken struct {
	claims *Claims
	keys   *JWKS
}

// verifiedCacheSize bounds the verified-token cache (approximate bytes).
const verifiedCacheSize = 4 << 20

// VerifierOption configures a [Verifier].
type VerifierOption func(*Verifier)

// WithClock sets the time source used for exp/nbf/iat checks and JWKS
// refreshes; tests inject a fake clock here instead of sleeping.
func WithClock(now func() time.Time) VerifierOption {
	return func(v *Verifier) {
		if now != nil {
			v.now = now
		}
	}
}

// WithLeeway overrides [DefaultLeeway]. Negative values are treated as 0;
// [NewVerifier] rejects values above [MaxLeeway].
func WithLeeway(d time.Duration) VerifierOption {
	return func(v *Verifier) { v.leeway = max(d, 0) }
}

// WithIssuer requires every token's iss to equal iss ("" disables the
// check).
func WithIssuer(iss string) VerifierOption {
	return func(v *Verifier) { v.issuer = iss }
}

// WithAudience requires every token's aud (a string or an array) to contain
// aud ("" disables the check).
func WithAudience(aud string) VerifierOption {
	return func(v *Verifier) { v.audience = aud }
}

// WithJWKSFile also accepts RS256 and ES256 tokens signed by the keys of
// the RFC 7517 JWK Set in path (see [ParseJWKS]). [NewVerifier] fails when
// the file cannot be read or has no usable key. "" disables it.
func WithJWKSFile(path string) VerifierOption {
	return func(v *Verifier) { v.jwksPath = path }
}

// WithJWKSRefresh overrides [DefaultJWKSRefresh], the interval at which the
// JWKS file is checked for changes. Values below one second are raised to
// one second.
func WithJWKSRefresh(d time.Duration) VerifierOption {
	return func(v *Verifier) { v.jwksRefresh = max(d, time.Second) }
}

// WithLogger logs JWKS loads, reloads and failed reloads to l.
func WithLogger(l *slog.Logger) VerifierOption {
	return func(v *Verifier) { v.logger = l }
}

// NewVerifier returns a Verifier for HS256 tokens signed with secret, plus
// RS256/ES256 tokens when [WithJWKSFile] is given. Like [NewSigner] it
// rejects secrets shorter than [MinSecretLen]. The secret is copied.
func NewVerifier(secret []byte, opts ...VerifierOption) (*Verifier, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("auth: verification secret must be at least %d bytes", MinSecretLen)
	}
	v := &Verifier{
		hmacKey:     append([]byte(nil), secret...),
		now:         time.Now,
		leeway:      DefaultLeeway,
		jwksRefresh: DefaultJWKSRefresh,
		verified:    lru.New[string, verifiedToken](verifiedCacheSize),
	}
	for _, o := range opts {
		o(v)
	}
	if v.leeway > MaxLeeway {
		return nil, fmt.Errorf("auth: clock skew %s is above the maximum of %s", v.leeway, MaxLeeway)
	}
	if v.jwksPath != "" {
		src, err := newJWKSSource(v.jwksPath, v.jwksRefresh, v.now, v.logger)
		if err != nil {
			return nil, err
		}
		v.jwks = src
	}
	return v, nil
}

// Verify checks token's signature and claims and returns the claims.
//
// HS256 is verified with the shared secret only; RS256 and ES256 only with
// a JWKS key of the matching type, chosen by the kid header. "none" and
// every other algorithm are rejected before any key is used, which closes
// algorithm-confusion attacks. exp is mandatory; nbf and iat must not lie in
// the future beyond the leeway; iss and aud must match when configured.
// Errors wrap [ErrMissingToken], [ErrExpiredToken] or [ErrInvalidToken] plus
// the causes (ErrWrongAudience, ...); [PublicMessage] turns them into text
// fit for callers, while Error() adds details meant for server logs.
func (v *Verifier) Verify(token string) (*Claims, error) {
	if token == "" {
		return nil, ErrMissingToken
	}
	keys := v.currentKeys()
	if hit, ok := v.verified.Get(token); ok && hit.keys == keys {
		if causes, _ := v.checkClaims(hit.claims); len(causes) == 0 {
			c := *hit.claims
			return &c, nil
		}
		// No longer valid (expired, say): the full check below says why.
	}
	p := jwt.NewParser(
		jwt.WithValidMethods(v.algorithms()),
		// Claims are checked by checkClaims below, after the signature, so
		// every failure maps to a precise cause.
		jwt.WithoutClaimsValidation(),
	)
	claims := &Claims{}
	tok, err := p.ParseWithClaims(token, claims, v.keyFor)
	if err != nil {
		return nil, &VerifyError{kind: ErrInvalidToken, causes: []error{v.parseCause(tok, err)}, detail: err}
	}
	if causes, detail := v.checkClaims(claims); len(causes) > 0 {
		// Only call it "expired" when expiry is the sole problem: telling a
		// client to refresh a token that is broken in other ways would just
		// make it retry with the same broken claims.
		if len(causes) == 1 && errors.Is(causes[0], errExpired) {
			return nil, &VerifyError{kind: ErrExpiredToken, detail: detail}
		}
		return nil, &VerifyError{kind: ErrInvalidToken, causes: causes, detail: detail}
	}
	cached := *claims
	v.verified.Put(token, verifiedToken{claims: &cached, keys: keys}, int64(len(token))+512)
	return claims, nil
}

// currentKeys is the JWKS key set in effect (nil without JWKS).
func (v *Verifier) currentKeys() *JWKS {
	if v.jwks == nil {
		return nil
	}
	return v.jwks.keys(false)
}

// algorithms lists the JWS "alg" values this Verifier accepts.
func (v *Verifier) algorithms() []string {
	algs := []string{jwt.SigningMethodHS256.Alg()}
	if v.jwks != nil {
		algs = append(algs, jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg())
	}
	return algs
}

// keyFor returns the verification key for t. It re-checks the algorithm
// even though the parser already filtered it, so the HMAC secret can only
// ever reach the HS256 method and a JWKS key only the method of its type.
func (v *Verifier) keyFor(t *jwt.Token) (any, error) {
	alg, _ := t.Header["alg"].(string)
	kid, hasKID := t.Header["kid"].(string)
	if _, present := t.Header["kid"]; present && !hasKID {
		return nil, fmt.Errorf("%w: kid header is not a string", ErrUnknownKey)
	}
	// RFC 7515 §4.1.11: critical extensions we do not understand must be
	// refused. (Key-carrying headers such as jwk, jku and x5u are simply
	// never looked at: keys come from the secret and the JWKS file only.)
	if _, present := t.Header["crit"]; present {
		return nil, fmt.Errorf("%w: crit header is not supported", ErrMalformed)
	}
	switch {
	case t.Method == jwt.SigningMethodHS256 && alg == t.Method.Alg():
		// An HS256 token naming one of the public keys is an algorithm
		// confusion attempt (an HMAC keyed with public key bytes).
		if hasKID && v.jwks != nil && v.jwks.keys(false).hasKID(kid) {
			return nil, fmt.Errorf("%w: HS256 token names JWKS key %s", ErrUnsupportedAlg, quoteShort(kid))
		}
		return v.hmacKey, nil
	case v.jwks != nil && alg == t.Method.Alg() &&
		(t.Method == jwt.SigningMethodRS256 || t.Method == jwt.SigningMethodES256):
		set := v.jwks.keys(false)
		key, err := set.byKID(kid, hasKID)
		if errors.Is(err, ErrUnknownKey) && hasKID {
			// Perhaps the key was just rotated in: look at the file again.
			set = v.jwks.keys(true)
			key, err = set.byKID(kid, hasKID)
		}
		if err != nil {
			return nil, err
		}
		if key.alg != alg {
			return nil, fmt.Errorf("%w: %s token names %s key %s", ErrUnsupportedAlg, alg, key.kty, quoteShort(key.kid))
		}
		return key.pub, nil
	default:
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedAlg, quoteShort(alg))
	}
}

// parseCause maps a parse or signature failure to its public cause.
func (v *Verifier) parseCause(tok *jwt.Token, err error) error {
	for _, cause := range []error{ErrUnsupportedAlg, ErrUnknownKey, ErrMalformed} {
		if errors.Is(err, cause) {
			return cause
		}
	}
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return ErrMalformed
	case tok != nil && tok.Method != nil && !slices.Contains(v.algorithms(), tok.Method.Alg()):
		return ErrUnsupportedAlg // filtered by WithValidMethods
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return ErrUnsupportedAlg // alg missing or unknown to the library
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return ErrBadSignature
	default:
		return ErrMalformed
	}
}

// checkClaims checks the registered claims against the clock and the
// configured issuer and audience, then the application claims. It returns
// the public causes and an error with the details.
func (v *Verifier) checkClaims(c *Claims) ([]error, error) {
	now := v.now()
	var causes, details []error
	add := func(cause error, detail string) {
		causes = append(causes, cause)
		details = append(details, fmt.Errorf("%w: %s", cause, detail))
	}
	switch {
	case c.ExpiresAt == nil:
		add(ErrMissingExp, "exp claim is required")
	case !now.Before(c.ExpiresAt.Add(v.leeway)):
		add(errExpired, fmt.Sprintf("exp %s is past (now %s, skew %s)", c.ExpiresAt.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), v.leeway))
	}
	if c.NotBefore != nil && now.Before(c.NotBefore.Add(-v.leeway)) {
		add(ErrNotYetValid, fmt.Sprintf("nbf %s is ahead (now %s, skew %s)", c.NotBefore.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), v.leeway))
	}
	if c.IssuedAt != nil && now.Before(c.IssuedAt.Add(-v.leeway)) {
		add(ErrIssuedInFuture, fmt.Sprintf("iat %s is ahead (now %s, skew %s)", c.IssuedAt.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), v.leeway))
	}
	if v.issuer != "" && c.Issuer != v.issuer {
		add(ErrWrongIssuer, fmt.Sprintf("iss %s, want %q", quoteShort(c.Issuer), v.issuer))
	}
	if v.audience != "" && !slices.Contains(c.Audience, v.audience) {
		add(ErrWrongAudience, fmt.Sprintf("aud does not contain %q", v.audience))
	}
	if err := c.validateApp(); err != nil {
		causes = append(causes, ErrBadClaims)
		details = append(details, fmt.Errorf("%w: %w", ErrBadClaims, err))
	}
	return causes, errors.Join(details...)
}

// VerifyError is the error of a rejected token. errors.Is matches its kind
// ([ErrInvalidToken] or [ErrExpiredToken]) and each cause (ErrWrongAudience,
// ErrBadSignature, ...). Error() includes details for server logs;
// [PublicMessage] is what callers may see.
type VerifyError struct {
	kind   error
	causes []error
	detail error
}

// Error implements error.
func (e *VerifyError) Error() string {
	if e.detail == nil {
		return e.kind.Error()
	}
	return e.kind.Error() + ": " + e.detail.Error()
}

// Unwrap exposes the kind, the causes and the detail to errors.Is/As.
func (e *VerifyError) Unwrap() []error {
	errs := append([]error{e.kind}, e.causes...)
	if e.detail != nil {
		errs = append(errs, e.detail)
	}
	return errs
}

// public is the caller-facing text: "token expired" or "invalid token:
// <cause>, <cause>".
func (e *VerifyError) public() string {
	if errors.Is(e.kind, ErrExpiredToken) {
		return "token expired"
	}
	if len(e.causes) == 0 {
		return "invalid token"
	}
	msgs := make([]string, len(e.causes))
	for i, c := range e.causes {
		msgs[i] = c.Error()
	}
	return "invalid token: " + strings.Join(msgs, ", ")
}

// PublicMessage is the text to send a caller whose token err rejected: why
// it was rejected (expired, not yet valid, wrong audience, wrong issuer,
// unknown key, bad signature, unsupported alg, ...) from a fixed vocabulary,
// never any part of the token or of the server's configuration.
func PublicMessage(err error) string {
	if ve, ok := errors.AsType[*VerifyError](err); ok {
		return ve.public()
	}
	switch {
	case errors.Is(err, ErrMissingToken):
		return "missing bearer token"
	case errors.Is(err, ErrExpiredToken):
		return "token expired"
	default:
		return "invalid token"
	}
}

// Cache is the cache of verified tokens, for the memory budget and metrics.
func (v *Verifier) Cache() *lru.Cache[string, verifiedToken] { return v.verified }
