package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
)

func TestTokenCommandMintsVerifiableToken(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := TokenCommand([]string{"--data-dir", dir, "--sub", "curator", "--role", "agent", "--agent", "garden-bloom-curator", "--ttl", "2h"},
		env(nil), &out)
	require.NoError(t, err)

	fi, err := os.Stat(filepath.Join(dir, "auth.secret"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	secret, err := auth.LoadSecret(filepath.Join(dir, "auth.secret"))
	require.NoError(t, err)
	v, err := auth.NewVerifier(secret)
	require.NoError(t, err)
	claims, err := v.Verify(strings.TrimSpace(out.String()))
	require.NoError(t, err)
	require.Equal(t, "curator", claims.Subject)
	require.True(t, claims.HasRole(auth.RoleAgent))
	require.True(t, claims.CanAccessAgent("garden-bloom-curator"))
	require.False(t, claims.CanAccessAgent("other"))
	require.WithinDuration(t, time.Now().Add(2*time.Hour), claims.ExpiresAt.Time, time.Minute)
}

func TestTokenCommandErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no sub", []string{"--data-dir", dir, "--role", "admin"}, "--sub is required"},
		{"no role", []string{"--data-dir", dir, "--sub", "x"}, "--role is required"},
		{"unknown role", []string{"--data-dir", dir, "--sub", "x", "--role", "root"}, "root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := TokenCommand(tt.args, env(nil), &bytes.Buffer{})
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
