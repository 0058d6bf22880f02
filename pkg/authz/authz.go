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

// globalRoles reach every agent whatever the token's agents list says.
var globalRoles = []auth.Role{auth.RoleService, auth.RoleAdmin}

// reach tells which agents role r of c reaches: all of them, or the listed
// ones. Service and admin reach every agent; an agent token only the agents
// it names ("*" = all); a reviewer every agent unless its token lists some,
// which then restrict it ("*" = all).
func reach(c *auth.Claims, r auth.Role) (all bool, agents []string) {
	switch {
	case slices.Contains(globalRoles, r), c.CanAccessAgent(auth.AllAgents):
		return true, nil
	case r == auth.RoleReviewer && len(c.Agents) == 0:
		return true, nil
	}
	return false, c.Agents
}

// RequireAgent passes when the caller has any of roles and may act on
// agentID through one of them. The error never says whether the agent exists.
func RequireAgent(ctx context.Context, agentID string, roles ...auth.Role) (*auth.Claims, error) {
	c, err := RequireRole(ctx, roles...)
	if err != nil {
		return nil, err
	}
	for _, r := range roles {
		if !c.HasRole(r) {
			continue
		}
		if all, _ := reach(c, r); all || c.CanAccessAgent(agentID) {
			return c, nil
		}
	}
	return nil, denied("the token does not grant access to this agent")
}

// VisibleAgents returns the agents the caller may list through roles (nil =
// all, empty = none). Only the roles a call allows count: an agent+reviewer
// token searching memory (a call reviewers may not make) sees only its own
// agents. Without roles, every role of the token counts.
func VisibleAgents(c *auth.Claims, roles ...auth.Role) []string {
	if len(roles) == 0 {
		roles = c.Roles
	}
	out := []string{}
	for _, r := range roles {
		if !c.HasRole(r) {
			continue
		}
		all, agents := reach(c, r)
		if all {
			return nil
		}
		for _, a := range agents {
			if a != "" && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

func denied(msg string) error {
	return apierr.New(codes.PermissionDenied, memoryv1.ErrorReason_ERROR_REASON_PERMISSION_DENIED, msg, nil)
}
