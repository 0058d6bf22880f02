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
		{"stray argument", []string{"--data-dir", dir, "--sub", "x", "--role", "agent", "admin"}, "unexpected arguments"},
		{"unknown config key", []string{"--data-dir", dir, "--sub", "x", "--role", "agent", "--config", writeFile(t, dir, "bad.yaml", "auth_issuer: x\n")}, `unknown key "auth_issuer"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := TokenCommand(tt.args, env(nil), &bytes.Buffer{})
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestTokenCommandIssuerAudience(t *testing.T) {
	dir := t.TempDir()
	configFile := filepath.Join(dir, "memoryd.yaml")
	require.NoError(t, os.WriteFile(configFile, []byte("auth-issuer: https://file.example/\nauth-audience: from-file\ndata-dir: "+dir+"\n"), 0o600))
	base := []string{"--data-dir", dir, "--sub", "ci", "--role", "service"}

	tests := []struct {
		name             string
		args             []string
		env              map[string]string
		wantIss, wantAud string
	}{
		{name: "none configured", args: base},
		{name: "flags", args: append([]string{"--iss", "https://idp.example/", "--aud", "memoryd"}, base...),
			wantIss: "https://idp.example/", wantAud: "memoryd"},
		{name: "defaults to the configured env", args: base,
			env:     map[string]string{"MEMORYD_AUTH_ISSUER": "https://env.example/", "MEMORYD_AUTH_AUDIENCE": "from-env"},
			wantIss: "https://env.example/", wantAud: "from-env"},
		{name: "flags over env", args: append([]string{"--aud", "flag-aud"}, base...),
			env:     map[string]string{"MEMORYD_AUTH_ISSUER": "https://env.example/", "MEMORYD_AUTH_AUDIENCE": "from-env"},
			wantIss: "https://env.example/", wantAud: "flag-aud"},
		{name: "explicit empty flag leaves the claim out", args: append([]string{"--iss="}, base...),
			env:     map[string]string{"MEMORYD_AUTH_ISSUER": "https://env.example/", "MEMORYD_AUTH_AUDIENCE": "from-env"},
			wantIss: "", wantAud: "from-env"},
		{name: "defaults to the config file", args: []string{"--config", configFile, "--sub", "ci", "--role", "service"},
			wantIss: "https://file.example/", wantAud: "from-file"},
		{name: "env over config file", args: []string{"--sub", "ci", "--role", "service"},
			env:     map[string]string{"MEMORYD_CONFIG": configFile, "MEMORYD_AUTH_AUDIENCE": "from-env"},
			wantIss: "https://file.example/", wantAud: "from-env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, TokenCommand(tt.args, env(tt.env), &out))

			secret, err := auth.LoadSecret(filepath.Join(dir, "auth.secret"))
			require.NoError(t, err)
			v, err := auth.NewVerifier(secret, auth.WithIssuer(tt.wantIss), auth.WithAudience(tt.wantAud))
			require.NoError(t, err)
			claims, err := v.Verify(strings.TrimSpace(out.String()))
			require.NoError(t, err)
			require.Equal(t, tt.wantIss, claims.Issuer)
			if tt.wantAud == "" {
				require.Empty(t, claims.Audience)
			} else {
				require.Equal(t, []string{tt.wantAud}, []string(claims.Audience))
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}
