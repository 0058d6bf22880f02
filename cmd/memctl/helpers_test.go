package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/cmd/memoryd/app"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/telemetry"
)

// memoryd is the real server the end-to-end tests run against: the whole
// suite (--target=all) in this test process, on loopback ports, with a
// throw-away data dir and the default policy (proposals wait for a
// reviewer), as `make run` starts it.
type memoryd struct {
	addr, httpAddr, dataDir string
	signer                  *auth.Signer
	stop                    func()
}

var (
	suiteOnce sync.Once
	suite     *memoryd
	suiteErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if suite != nil {
		suite.stop()
		_ = os.RemoveAll(suite.dataDir)
	}
	os.Exit(code)
}

// server returns the shared memoryd, starting it on first use.
func server(t testing.TB) *memoryd {
	t.Helper()
	suiteOnce.Do(func() {
		suiteErr = errors.New("memoryd did not start (see the first test that failed)")
		dir, err := os.MkdirTemp("", "memctl-e2e-")
		require.NoError(t, err)
		suite = startMemoryd(t, dir)
		suiteErr = nil
	})
	require.NoError(t, suiteErr)
	return suite
}

// startMemoryd runs memoryd on dataDir until stop, and waits until GET
// /health says every module is ready.
func startMemoryd(t testing.TB, dataDir string, extra ...string) *memoryd {
	cfg, flags, err := app.LoadConfig(append([]string{"--data-dir", dataDir, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--search-sources-poll", "100ms"}, extra...), func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, flags, telemetry.NewLogger(io.Discard, 0))
	if err != nil {
		cancel()
	}
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintln(os.Stderr, "memoryd stopped with:", err)
			}
		case <-time.After(time.Minute):
			fmt.Fprintln(os.Stderr, "memoryd did not stop within a minute")
		}
	}
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + a.HTTPAddr() + "/health")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 20*time.Millisecond, "memoryd becomes ready")
	secret, err := auth.LoadOrCreateSecret(cfg.SecretPath())
	require.NoError(t, err)
	signer, err := auth.NewSigner(secret)
	require.NoError(t, err)
	return &memoryd{addr: a.GRPCAddr(), httpAddr: a.HTTPAddr(), dataDir: dataDir, signer: signer, stop: stop}
}

// token mints a token for sub with roles over agents.
func (s *memoryd) token(t testing.TB, sub string, roles []auth.Role, agents ...string) string {
	t.Helper()
	tok, err := s.signer.Mint(sub, roles, agents, time.Hour)
	require.NoError(t, err)
	return tok
}

// operator is a person with the admin and reviewer roles over every agent
// (not rate-limited: privileged tokens are not, by default).
func (s *memoryd) operator(t testing.TB) string {
	return s.token(t, "operator", []auth.Role{auth.RoleAdmin, auth.RoleReviewer}, auth.AllAgents)
}

// agentToken is an agent's own token.
func (s *memoryd) agentToken(t testing.TB, agent string) string {
	return s.token(t, agent+"-run", []auth.Role{auth.RoleAgent}, agent)
}

// result is one memctl run.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// json decodes stdout into a generic value.
func (r result) json(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), "stdout is not one JSON object:\n%s", r)
	return v
}

// clirun runs memctl in-process (the real root command, a fresh one per run)
// with an environment of its own: no config file unless the test writes
// one, and the server and token of env.
type clirun struct {
	t   testing.TB
	env map[string]string
	in  string
}

// memctlFor returns a runner talking to s with token.
func memctlFor(t testing.TB, s *memoryd, token string) *clirun {
	return &clirun{t: t, env: map[string]string{
		envConfig: filepath.Join(t.TempDir(), "config.yaml"),
		envAddr:   s.addr,
		envToken:  token,
	}}
}

func (c *clirun) run(args ...string) result {
	c.t.Helper()
	var out, errOut bytes.Buffer
	lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := run(ctx, args, streams{in: strings.NewReader(c.in), out: &out, err: &errOut}, lookup)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// ok runs memctl and requires exit code 0.
func (c *clirun) ok(args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	require.Equal(c.t, 0, r.code, "memctl %s\n%s", strings.Join(args, " "), r)
	return r
}

// jsonOK runs memctl with -o json, requires exit 0 and returns the document.
func (c *clirun) jsonOK(args ...string) map[string]any {
	c.t.Helper()
	return c.ok(append(args, "-o", "json")...).json(c.t)
}

// fails runs memctl and requires exit code code and one
// "memctl: REASON: message" line on stderr naming reason.
func (c *clirun) fails(code int, reason string, args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	require.Equal(c.t, code, r.code, "memctl %s\n%s", strings.Join(args, " "), r)
	require.Contains(c.t, r.stderr, "memctl: "+reason+": ", "memctl %s\n%s", strings.Join(args, " "), r)
	return r
}

// git runs git on the suite's repository.
func (s *memoryd) git(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"--git-dir", filepath.Join(s.dataDir, "memory.git")}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

// writeFile writes content to a new file in a temp dir and returns its path.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// get walks a JSON document: get(doc, "a", "b", 0, "c").
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}
