package authz

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garden-bloom/memory/pkg/auth"
)

func as(roles []auth.Role, agents ...string) context.Context {
	return auth.ContextWithClaims(context.Background(), &auth.Claims{Roles: roles, Agents: agents})
}

func TestRequireAgent(t *testing.T) {
	tests := []struct {
		name    string
		ctx     context.Context
		agent   string
		allowed []auth.Role
		want    codes.Code
	}{
		{"no claims", context.Background(), "a", []auth.Role{auth.RoleAgent}, codes.Unauthenticated},
		{"own agent", as([]auth.Role{auth.RoleAgent}, "a"), "a", []auth.Role{auth.RoleAgent}, codes.OK},
		{"other agent", as([]auth.Role{auth.RoleAgent}, "a"), "b", []auth.Role{auth.RoleAgent}, codes.PermissionDenied},
		{"agent with star", as([]auth.Role{auth.RoleAgent}, "*"), "b", []auth.Role{auth.RoleAgent}, codes.OK},
		{"service reaches any agent", as([]auth.Role{auth.RoleService}), "b", []auth.Role{auth.RoleAgent, auth.RoleService}, codes.OK},
		{"role not allowed", as([]auth.Role{auth.RoleService}), "b", []auth.Role{auth.RoleReviewer}, codes.PermissionDenied},
		{"reviewer on a review call", as([]auth.Role{auth.RoleReviewer}), "b", []auth.Role{auth.RoleReviewer}, codes.OK},
		// A global role only counts when the call allows it: an agent+reviewer
		// token reading memory is limited to its own agents.
		{"global role not allowed here", as([]auth.Role{auth.RoleAgent, auth.RoleReviewer}, "a"), "b", []auth.Role{auth.RoleAgent}, codes.PermissionDenied},
		// A reviewer reaches every agent unless its token lists some.
		{"reviewer restricted to its agents", as([]auth.Role{auth.RoleReviewer}, "a"), "b", []auth.Role{auth.RoleReviewer}, codes.PermissionDenied},
		{"reviewer on a listed agent", as([]auth.Role{auth.RoleReviewer}, "a"), "a", []auth.Role{auth.RoleReviewer}, codes.OK},
		{"reviewer with star", as([]auth.Role{auth.RoleReviewer}, "*"), "b", []auth.Role{auth.RoleReviewer}, codes.OK},
		{"admin ignores its agents list", as([]auth.Role{auth.RoleAdmin}, "a"), "b", []auth.Role{auth.RoleAdmin}, codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RequireAgent(tt.ctx, tt.agent, tt.allowed...)
			require.Equal(t, tt.want, status.Code(err), "%v", err)
		})
	}
}

func TestVisibleAgents(t *testing.T) {
	require.Nil(t, VisibleAgents(&auth.Claims{Roles: []auth.Role{auth.RoleService}}))
	require.Nil(t, VisibleAgents(&auth.Claims{Roles: []auth.Role{auth.RoleAgent}, Agents: []string{"*"}}))
	require.Equal(t, []string{"a", "b"}, VisibleAgents(&auth.Claims{Roles: []auth.Role{auth.RoleAgent}, Agents: []string{"a", "b"}}))
	require.Empty(t, VisibleAgents(&auth.Claims{Roles: []auth.Role{auth.RoleAgent}}))
	require.NotNil(t, VisibleAgents(&auth.Claims{Roles: []auth.Role{auth.RoleAgent}}), "empty means none, nil means all")

	// Only the roles the call allows count.
	mixed := &auth.Claims{Roles: []auth.Role{auth.RoleAgent, auth.RoleReviewer}, Agents: []string{"a"}}
	require.Equal(t, []string{"a"}, VisibleAgents(mixed, auth.RoleAgent, auth.RoleService, auth.RoleAdmin))
	require.Nil(t, VisibleAgents(&auth.Claims{Roles: []auth.Role{auth.RoleAgent, auth.RoleReviewer}}, auth.RoleAgent, auth.RoleReviewer),
		"a reviewer without an agents list sees every agent on a review call")
	require.Equal(t, []string{"a"}, VisibleAgents(&auth.Claims{Roles: []auth.Role{auth.RoleReviewer}, Agents: []string{"a"}}, auth.RoleReviewer))
	require.Empty(t, VisibleAgents(&auth.Claims{Roles: []auth.Role{auth.RoleReviewer}}, auth.RoleAgent), "a role the call does not allow sees nothing")
}
