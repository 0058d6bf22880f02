package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"gopkg.in/yaml.v3"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
)

// Issue #27: "--help with examples on every command".
func TestEveryCommandHasHelpWithAnExample(t *testing.T) {
	c := &cli{streams: streams{in: strings.NewReader(""), out: &strings.Builder{}, err: &strings.Builder{}},
		lookupEnv: func(string) (string, bool) { return "", false }}
	root := c.rootCommand()
	var walk func(cmd *cobra.Command, path []string)
	count := 0
	walk = func(cmd *cobra.Command, path []string) {
		if cmd.Hidden {
			return
		}
		count++
		require.NotEmpty(t, cmd.Example, "memctl %s has no Example", strings.Join(path, " "))
		require.NotEmpty(t, cmd.Short, "memctl %s has no Short", strings.Join(path, " "))
		r := (&clirun{t: t, env: map[string]string{envConfig: filepath.Join(t.TempDir(), "c.yaml")}}).run(append(path, "--help")...)
		require.Equal(t, 0, r.code, r.String())
		require.Contains(t, r.stdout, "Examples:", "memctl %s --help", strings.Join(path, " "))
		for _, sub := range cmd.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(root, nil)
	require.Greater(t, count, 30, "every command and subcommand was walked")
}

// Issue #27: "exit codes that scripts can rely on" — a usage error is 2,
// reported as one line, before anything is sent (no server is running).
func TestUsageErrorsExitTwoWithOneLine(t *testing.T) {
	c := &clirun{t: t, env: map[string]string{envConfig: filepath.Join(t.TempDir(), "c.yaml"), envAddr: "127.0.0.1:1"}}
	for _, args := range [][]string{
		{"bogus"},
		{"read"},
		{"read", "a", "b"},
		{"read", "agent-x", "--bogus"},
		{"-o", "xml", "status"},
		{"read", "agent-x", "--mode", "sideways"},
		{"ingest"},
		{"ingest", "/no/such/file.jsonl", "--agent", "a"},
		{"proposals", "reject", "proposal_1"},
		{"stale", "set-ttl", "a", "some fact", "--ttl", "soon"},
		{"stale", "set-ttl", "a", "some fact"},
		{"--timeout", "0s", "status"},
		{"search", "q", "--depth", "9", "--expand"},
		{"init", "a", "--template", "nope"},
		{"export-onboarding"},
		{"entities", "why"},
		{"proposals", "list", "--status", "maybe"},
		{"--addr", "x:1", "--data-dir", "/tmp/x", "status"},
	} {
		r := c.run(args...)
		require.Equal(t, exitUsage, r.code, "memctl %s\n%s", strings.Join(args, " "), r)
		require.True(t, strings.HasPrefix(r.stderr, "memctl: USAGE: "), "memctl %s\n%s", strings.Join(args, " "), r)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
		require.Empty(t, r.stdout)
	}
}

// Issue #27: "memctl login stores them, mode 0600".
func TestLoginStoresAddressAndTokenWithMode0600(t *testing.T) {
	s := server(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "memctl", "config.yaml")
	c := &clirun{t: t, env: map[string]string{envConfig: cfg}}
	tok := s.operator(t)
	r := c.ok("login", "--addr", s.addr, "--token", tok)
	require.Contains(t, r.stdout, cfg)
	info, err := os.Stat(cfg)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	var saved fileConfig
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &saved))
	require.Equal(t, fileConfig{Addr: s.addr, Token: tok}, saved)

	// Later commands need neither flag nor environment.
	doc := c.jsonOK("proposals", "list", "--limit", "1")
	require.Contains(t, doc, "proposals")

	// A file someone made readable by others is 0600 again after login,
	// and "--token -" reads the token from stdin.
	require.NoError(t, os.Chmod(cfg, 0o644))
	c.in = tok + "\n"
	c.ok("login", "--addr", s.addr, "--token", "-")
	info, err = os.Stat(cfg)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	b, err = os.ReadFile(cfg)
	require.NoError(t, err)
	require.Contains(t, string(b), tok)

	// A server that does not answer is not saved.
	c.fails(exitUnavailable, "UNAVAILABLE", "login", "--addr", "127.0.0.1:1", "--token", "x")
	c.fails(exitUsage, "USAGE", "login", "--token", "x")
}

// Issue #27: "Address and token from flags (--addr, --token), env
// (MEMCTL_ADDR, MEMCTL_TOKEN) or a config file" — flag > env > config.
func TestFlagsOverrideEnvironmentOverrideConfigFile(t *testing.T) {
	s := server(t)
	agent := "precedence"
	good := s.operator(t)
	other := s.agentToken(t, "someone-else")
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, saveConfig(cfg, fileConfig{Addr: "127.0.0.1:1", Token: other}))

	c := &clirun{t: t, env: map[string]string{envConfig: cfg}}
	// Config alone: a dead address.
	c.fails(exitUnavailable, "UNAVAILABLE", "status", agent)
	// The environment's address beats the config's; the config's token
	// (another agent's) is still used and refused.
	c.env[envAddr] = s.addr
	c.fails(exitDenied, "PERMISSION_DENIED", "read", agent)
	// The environment's token beats the config's.
	c.env[envToken] = good
	c.fails(exitNotFound, "AGENT_NOT_FOUND", "read", agent)
	st := c.jsonOK("status")
	require.Equal(t, "environment", st["from"])
	require.Equal(t, s.addr, st["target"])
	// Flags beat both.
	c.fails(exitUnavailable, "UNAVAILABLE", "--addr", "127.0.0.1:1", "read", agent)
	c.fails(exitDenied, "UNAUTHENTICATED", "--token", "not-a-jwt", "read", agent)
	st = c.jsonOK("--addr", s.addr, "status")
	require.Equal(t, "flags", st["from"])
	// Without anything: the default address.
	none := &clirun{t: t, env: map[string]string{envConfig: filepath.Join(t.TempDir(), "none.yaml")}}
	r := none.run("status", "-o", "json")
	require.Contains(t, r.stdout+r.stderr, defaultAddr+`"`, r.String())
}

func TestParseTTL(t *testing.T) {
	for in, want := range map[string]string{"72h": "72h0m0s", "30d": "720h0m0s", "2w": "336h0m0s", "0": "0s", "90m": "1h30m0s"} {
		d, err := parseTTL(in)
		require.NoError(t, err, in)
		require.Equal(t, want, d.String(), in)
	}
	for _, bad := range []string{"", "soon", "-1d", "-5h", "1.5d"} {
		_, err := parseTTL(bad)
		require.Error(t, err, bad)
	}
}

func TestResolveTargetPrecedence(t *testing.T) {
	yes := true
	got, err := resolveTarget([]settingLevel{
		{name: "flags"},
		{name: "environment", token: "env-token", tokenSet: true},
		{name: "config", addr: "cfg:1", addrSet: true, token: "cfg-token", tokenSet: true, tls: &yes},
	})
	require.NoError(t, err)
	require.Equal(t, target{Addr: "cfg:1", Token: "env-token", TLS: true, From: "config"}, got)

	got, err = resolveTarget([]settingLevel{{name: "flags", dataDir: "/d", ds: true}, {name: "environment", addr: "env:1", addrSet: true}})
	require.NoError(t, err)
	require.Equal(t, "/d", got.DataDir)
	require.Empty(t, got.Addr)

	_, err = resolveTarget([]settingLevel{{name: "flags", dataDir: "/d", ds: true, addr: "a:1", addrSet: true}})
	require.Error(t, err)
	require.Equal(t, exitUsage, exitCodeOf(err))

	got, err = resolveTarget(nil)
	require.NoError(t, err)
	require.Equal(t, target{Addr: defaultAddr, From: "default"}, got)
}

// The exit-code table of docs/cli.md, for the reasons an end-to-end test
// cannot easily provoke.
func TestExitCodeTable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		line string
	}{
		{apierr.New(codes.Aborted, memoryv1.ErrorReason_ERROR_REASON_VERSION_CONFLICT, "expected 3, at 4", map[string]string{"currentVersion": "4", "expectedVersion": "3"}),
			exitConflict, "memctl: VERSION_CONFLICT: expected 3, at 4 (currentVersion=4, expectedVersion=3)\n"},
		{apierr.Retryable(codes.ResourceExhausted, memoryv1.ErrorReason_ERROR_REASON_RATE_LIMITED, "slow down", time.Second),
			exitUnavailable, "memctl: RATE_LIMITED: slow down\n"},
		{apierr.New(codes.Unauthenticated, memoryv1.ErrorReason_ERROR_REASON_TOKEN_EXPIRED, "token expired", nil), exitDenied, "memctl: TOKEN_EXPIRED: token expired\n"},
		{apierr.New(codes.DataLoss, memoryv1.ErrorReason_ERROR_REASON_MEMORY_CORRUPTED, "facts.md is empty", nil), exitError, "memctl: MEMORY_CORRUPTED: facts.md is empty\n"},
		{status.Error(codes.DeadlineExceeded, "too slow"), exitUnavailable, "memctl: DEADLINE_EXCEEDED: too slow\n"},
		{status.Error(codes.NotFound, "gone"), exitNotFound, "memctl: NOT_FOUND: gone\n"},
		{fmt.Errorf("waiting: %w", context.DeadlineExceeded), exitUnavailable, "memctl: DEADLINE_EXCEEDED: waiting: context deadline exceeded\n"},
		{errors.New("disk\nfull"), exitError, "memctl: disk full\n"},
	} {
		var b strings.Builder
		require.Equal(t, tc.code, report(&b, tc.err), tc.err.Error())
		require.Equal(t, tc.line, b.String())
	}
}
