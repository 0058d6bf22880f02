package auth

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
)

const (
	// ServiceTokenTTL is the lifetime of tokens minted by
	// [NewServiceCredentials]. Short, because a leaked service token grants
	// access to every agent.
	ServiceTokenTTL = 5 * time.Minute
	// serviceTokenRefresh is how long before expiry a cached token is
	// replaced, leaving room for clock skew and in-flight latency so a token
	// never expires between being attached and being checked.
	serviceTokenRefresh = time.Minute
)

// TokenCredentials attaches a self-minted service token to every RPC. Tokens
// are cached and reused until one minute before expiry so that a
// busy client signs roughly once every four minutes, not once per call. It
// is safe for concurrent use.
type TokenCredentials struct {
	signer *Signer
	sub    string

	mu     sync.Mutex
	token  string
	expiry time.Time
}

var _ credentials.PerRPCCredentials = (*TokenCredentials)(nil)

// NewServiceCredentials returns per-RPC credentials that identify the
// calling service as sub, with [RoleService] and access to all agents.
// Use it with grpc.WithPerRPCCredentials.
func NewServiceCredentials(s *Signer, sub string) *TokenCredentials {
	return &TokenCredentials{signer: s, sub: sub}
}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (c *TokenCredentials) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	tok, err := c.Token()
	if err != nil {
		return nil, err
	}
	return map[string]string{MetadataKey: "Bearer " + tok}, nil
}

// Token returns the cached service token, minting a new one when none is
// cached or the cached one is within the refresh window of expiring.
func (c *TokenCredentials) Token() (string, error) {
	if c == nil || c.signer == nil {
		return "", errors.New("auth: service credentials have no signer")
	}
	// Minting is a single HMAC, so holding the lock while doing it is cheap
	// and keeps concurrent callers from minting duplicate tokens.
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.signer.now()
	if c.token != "" && now.Before(c.expiry.Add(-serviceTokenRefresh)) {
		return c.token, nil
	}
	exp, tok, err := c.signer.mint(c.sub, []Role{RoleService}, []string{AllAgents}, ServiceTokenTTL)
	if err != nil {
		return "", err
	}
	c.token, c.expiry = tok, exp
	return tok, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials. It
// returns false because services currently talk plaintext over loopback;
// flip this once TLS is in place so tokens can never leak onto a network in
// clear text.
func (c *TokenCredentials) RequireTransportSecurity() bool { return false }

// StaticToken returns credentials that send token unchanged on every call.
// Meant for tests and CLIs that were handed a token; services should use
// [NewServiceCredentials] so tokens stay short-lived.
func StaticToken(token string) credentials.PerRPCCredentials {
	return staticToken(token)
}

type staticToken string

func (t staticToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{MetadataKey: "Bearer " + string(t)}, nil
}

func (staticToken) RequireTransportSecurity() bool { return false }
