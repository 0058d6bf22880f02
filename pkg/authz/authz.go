// Package authz decides, from the verified token's claims, whether a call may
// touch an agent's memory. Every service calls it, so a direct gRPC call is
// checked exactly like one through the REST edge.
package authz

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
)

// Caller returns the verified claims of the call.
func Caller(ctx context.Context) (*auth.Claims, error) {
	c, ok := auth.ClaimsFromContext(ctx)
	if !ok {
		return nil, apierr.New(codes.Unauthenticated, memoryv1.ErrorReason_ERROR_REASON_UNAUTHENTICATED, "missing bearer token", nil)
	}
	return c, nil
}

// RequireRole passes when the caller has any of roles.
func RequireRole(ctx context.Context, roles ...auth.Role) (*auth.Claims, error) {
	c, err := Caller(ctx)
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(roles, c.HasRole) {
		return c, nil
	}
	return nil, denied(fmt.Sprintf("this call needs one of the roles %v", roles))
}

// globalRoles reach every agent; the agent role reaches only the agents its
// token names.
var globalRoles = []auth.Role{auth.RoleService, auth.RoleAdmin, auth.RoleReviewer}

// RequireAgent passes when the caller has any of roles and may act on
// agentID through one of them. The error never says whether the agent exists.
func RequireAgent(ctx context.Context, agentID string, roles ...auth.Role) (*auth.Claims, error) {
	c, err := RequireRole(ctx, roles...)
	if err != nil {
		return nil, err
	}
	for _, r := range roles {
		if c.HasRole(r) && (slices.Contains(globalRoles, r) || c.CanAccessAgent(agentID)) {
			return c, nil
		}
	}
	return nil, denied("the token does not grant access to this agent")
}

// VisibleAgents returns the agents the caller may list (nil = all).
func VisibleAgents(c *auth.Claims) []string {
	if c.HasRole(auth.RoleService) || c.HasRole(auth.RoleAdmin) || c.HasRole(auth.RoleReviewer) || c.CanAccessAgent(auth.AllAgents) {
		return nil
	}
	return append([]string{}, c.Agents...)
}

func denied(msg string) error {
	return apierr.New(codes.PermissionDenied, memoryv1.ErrorReason_ERROR_REASON_PERMISSION_DENIED, msg, nil)
}
