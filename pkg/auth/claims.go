package auth

import (
	"errors"
	"fmt"
	"slices"

	"github.com/golang-jwt/jwt/v5"
)

// Role is a coarse permission granted to a token holder. Roles are kept as
// plain strings on the wire so tokens stay readable when debugging.
type Role string

// Known roles. Anything else in a token is rejected, so a typo in a minting
// tool cannot silently create a principal with no (or surprising) rights.
const (
	// RoleAgent is held by an agent acting on its own memories.
	RoleAgent Role = "agent"
	// RoleReviewer may inspect and curate memories of the agents it lists.
	RoleReviewer Role = "reviewer"
	// RoleAdmin may perform administrative operations.
	RoleAdmin Role = "admin"
	// RoleService identifies another backend service calling in.
	RoleService Role = "service"
)

// AllAgents is the wildcard entry in [Claims.Agents] granting access to every
// agent; it is what service tokens carry.
const AllAgents = "*"

// ParseRole converts s to a known [Role]. It is strict (exact, case-sensitive
// match) because roles are compared exactly everywhere else.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleAgent, RoleReviewer, RoleAdmin, RoleService:
		return r, nil
	default:
		return "", fmt.Errorf("auth: unknown role %q", s)
	}
}

// Claims is the JWT payload understood by every service.
type Claims struct {
	jwt.RegisteredClaims
	// Roles granted to the subject; must be non-empty and all known.
	Roles []Role `json:"roles"`
	// Agents whose memories the subject may touch; "*" means all of them.
	Agents []string `json:"agents"`
}

// HasRole reports whether the claims grant role r.
func (c *Claims) HasRole(r Role) bool {
	return c != nil && slices.Contains(c.Roles, r)
}

// CanAccessAgent reports whether the claims cover agentID, either by naming
// it or through the [AllAgents] wildcard. An empty agentID is never
// accessible, so a missing request field cannot match an empty grant.
func (c *Claims) CanAccessAgent(agentID string) bool {
	if c == nil || agentID == "" {
		return false
	}
	return slices.Contains(c.Agents, agentID) || slices.Contains(c.Agents, AllAgents)
}

// Validate checks the invariants every token must meet: a subject, an
// expiry and at least one known role. [Signer] runs it before signing, so we
// never mint a token a [Verifier] would reject; the Verifier checks the same
// after the signature (see [Verifier.Verify]).
func (c *Claims) Validate() error {
	var errs []error
	if c.ExpiresAt == nil {
		errs = append(errs, errors.New("auth: missing exp claim"))
	}
	if err := c.validateApp(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validateApp checks the application-level claims: a subject and at least
// one known role.
func (c *Claims) validateApp() error {
	var errs []error
	if c.Subject == "" {
		errs = append(errs, errors.New("auth: missing sub claim"))
	}
	if len(c.Roles) == 0 {
		errs = append(errs, errors.New("auth: no roles"))
	}
	for _, r := range c.Roles {
		if _, err := ParseRole(string(r)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
