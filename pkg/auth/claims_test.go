package auth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseRole(t *testing.T) {
	tests := []struct {
		in      string
		want    Role
		wantErr bool
	}{
		{in: "agent", want: RoleAgent},
		{in: "reviewer", want: RoleReviewer},
		{in: "admin", want: RoleAdmin},
		{in: "service", want: RoleService},
		{in: "Admin", wantErr: true},
		{in: "root", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRole(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestClaimsHasRole(t *testing.T) {
	c := &Claims{Roles: []Role{RoleAgent, RoleReviewer}}
	require.True(t, c.HasRole(RoleAgent))
	require.True(t, c.HasRole(RoleReviewer))
	require.False(t, c.HasRole(RoleAdmin))
	require.False(t, (*Claims)(nil).HasRole(RoleAgent))
}

func TestClaimsCanAccessAgent(t *testing.T) {
	tests := []struct {
		name   string
		agents []string
		id     string
		want   bool
	}{
		{name: "listed", agents: []string{"a", "b"}, id: "b", want: true},
		{name: "not listed", agents: []string{"a", "b"}, id: "c", want: false},
		{name: "wildcard", agents: []string{"*"}, id: "anything", want: true},
		{name: "wildcard among others", agents: []string{"a", "*"}, id: "z", want: true},
		{name: "no agents", agents: nil, id: "a", want: false},
		{name: "empty id never matches", agents: []string{"*", ""}, id: "", want: false},
		{name: "no prefix matching", agents: []string{"age"}, id: "agent", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Claims{Agents: tt.agents}
			require.Equal(t, tt.want, c.CanAccessAgent(tt.id))
		})
	}
	require.False(t, (*Claims)(nil).CanAccessAgent("a"))
}

func TestClaimsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Claims)
		wantErr string
	}{
		{name: "valid", mutate: func(*Claims) {}},
		{name: "missing sub", mutate: func(c *Claims) { c.Subject = "" }, wantErr: "missing sub"},
		{name: "missing exp", mutate: func(c *Claims) { c.ExpiresAt = nil }, wantErr: "missing exp"},
		{name: "no roles", mutate: func(c *Claims) { c.Roles = nil }, wantErr: "no roles"},
		{name: "unknown role", mutate: func(c *Claims) { c.Roles = []Role{RoleAgent, "root"} }, wantErr: `unknown role "root"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validClaims(t)
			tt.mutate(&c)
			err := c.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
