package gitserve_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/gitserve"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

var secret = []byte("0123456789abcdef0123456789abcdef-gitserve-test")

// env is a source repository served the way memoryd serves it: at
// /git/memory.git on a mux, behind auth.RequireHTTP.
type env struct {
	src    *memrepo.Repo
	srv    *httptest.Server // the production wiring
	bare   *httptest.Server // the handler alone, without the mux cleaning paths
	signer *auth.Signer
	dir    string
}

func setup(t *testing.T) *env {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not available")
	}
	// The developer's git config must not change the outcome.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	for _, k := range []string{"GIT_AUTHOR", "GIT_COMMITTER"} {
		t.Setenv(k+"_NAME", "gitserve test")
		t.Setenv(k+"_EMAIL", "test@example.com")
	}

	ctx := context.Background()
	dir := t.TempDir()
	src, err := memrepo.Init(ctx, filepath.Join(dir, "data", "memory.git"), memrepo.InitOptions{})
	require.NoError(t, err)
	h, _ := src.Head(ctx)
	_, err = src.Commit(ctx, memrepo.CommitRequest{Parent: h, Message: "facts",
		Changes: []memrepo.Change{{Path: "memory/a/facts.md", Content: []byte("- one\n")}}})
	require.NoError(t, err)
	// More than main: a tag and another branch travel too.
	git(t, "", "--git-dir", src.Path(), "tag", "-a", "-m", "v1", "v1", "main")
	git(t, "", "--git-dir", src.Path(), "branch", "side", "main~1")

	v, err := auth.NewVerifier(secret)
	require.NoError(t, err)
	s, err := auth.NewSigner(secret)
	require.NoError(t, err)
	gh, err := gitserve.New(src.Path(), "/git/memory.git", gitserve.Options{})
	require.NoError(t, err)
	protected := auth.RequireHTTP(v, []auth.Role{auth.RoleService, auth.RoleAdmin}, gh)
	mux := http.NewServeMux()
	mux.Handle("/git/", protected)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "elsewhere", http.StatusTeapot) })
	e := &env{src: src, srv: httptest.NewServer(mux), bare: httptest.NewServer(protected), signer: s, dir: dir}
	t.Cleanup(e.srv.Close)
	t.Cleanup(e.bare.Close)
	return e
}

func (e *env) url() string { return e.srv.URL + "/git/memory.git" }

func (e *env) token(t *testing.T, roles ...auth.Role) string {
	t.Helper()
	tok, err := e.signer.Mint("gitserve-test", roles, []string{auth.AllAgents}, 5*time.Minute)
	require.NoError(t, err)
	return tok
}

// git runs the git binary; it fails the test on error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, nil, args...)
	require.NoError(t, err, "git %v:\n%s", args, out)
	return out
}

// gitErr runs git with extra environment and returns its output and error.
func gitErr(dir string, extraEnv []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0"), extraEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// bearerEnv makes git send the token without putting it in argv.
func bearerEnv(tok string) []string {
	return []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: Bearer " + tok}
}

// refs lists every ref of a repository with its object, and HEAD's target.
func refs(t *testing.T, gitDir string) string {
	t.Helper()
	return git(t, "", "--git-dir", gitDir, "for-each-ref", "--format=%(objectname) %(refname)") +
		git(t, "", "--git-dir", gitDir, "symbolic-ref", "HEAD") +
		git(t, "", "--git-dir", gitDir, "rev-parse", "HEAD")
}

func TestMirrorThroughTheEndpoint(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	minted := 0
	m := memrepo.NewMirror(e.url(), filepath.Join(e.dir, "reader", "mirror.git"), memrepo.WithBearerToken(func() (string, error) {
		minted++
		return e.token(t, auth.RoleService), nil
	}))
	require.NoError(t, os.MkdirAll(filepath.Dir(m.Path()), 0o750))
	require.NoError(t, m.Sync(ctx), "clone")
	require.Equal(t, refs(t, e.src.Path()), refs(t, m.Path()), "same refs, same HEAD")
	cfg, err := os.ReadFile(filepath.Join(m.Path(), "config"))
	require.NoError(t, err)
	require.NotContains(t, string(cfg), "Bearer", "the token is not stored in the mirror")

	// A new commit arrives with the next fetch.
	h, _ := e.src.Head(ctx)
	h2, err := e.src.Commit(ctx, memrepo.CommitRequest{Parent: h, Message: "more",
		Changes: []memrepo.Change{{Path: "memory/a/facts.md", Content: []byte("- one\n- two\n")}}})
	require.NoError(t, err)
	require.NoError(t, m.Sync(ctx), "fetch")
	require.Equal(t, refs(t, e.src.Path()), refs(t, m.Path()))
	mirror, err := memrepo.Open(m.Path())
	require.NoError(t, err)
	got, err := mirror.ReadFile(ctx, h2, "memory/a/facts.md")
	require.NoError(t, err)
	require.Equal(t, "- one\n- two\n", string(got))
	require.Equal(t, 2, minted, "a fresh token for every sync")

	// An admin may clone too, with either protocol version.
	for _, proto := range []string{"0", "2"} {
		dst := filepath.Join(e.dir, "admin-v"+proto+".git")
		out, err := gitErr("", bearerEnv(e.token(t, auth.RoleAdmin)), "-c", "protocol.version="+proto, "clone", "--quiet", "--bare", e.url(), dst)
		require.NoError(t, err, out)
		require.Equal(t, git(t, "", "--git-dir", e.src.Path(), "rev-parse", "main"), git(t, "", "--git-dir", dst, "rev-parse", "main"))
	}
}

func TestGitPushIsRefused(t *testing.T) {
	e := setup(t)
	before := refs(t, e.src.Path())
	tok := e.token(t, auth.RoleService, auth.RoleAdmin)
	work := filepath.Join(e.dir, "work")
	out, err := gitErr("", bearerEnv(tok), "clone", "--quiet", e.url(), work)
	require.NoError(t, err, out)
	require.NoError(t, os.WriteFile(filepath.Join(work, "evil.md"), []byte("x"), 0o600))
	git(t, work, "add", "evil.md")
	git(t, work, "commit", "--quiet", "-m", "evil")
	for _, args := range [][]string{
		{"push", "origin", "HEAD:main"},
		{"push", "origin", "HEAD:refs/heads/evil"},
		{"push", "--delete", "origin", "side"},
	} {
		out, err := gitErr(work, bearerEnv(tok), args...)
		require.Error(t, err, "git %v must fail:\n%s", args, out)
		require.NotContains(t, out, tok)
	}
	require.Equal(t, before, refs(t, e.src.Path()), "the served repository is unchanged")

	// The push endpoints themselves, asked directly.
	for _, c := range []struct{ method, path string }{
		{"GET", "/git/memory.git/info/refs?service=git-receive-pack"},
		{"POST", "/git/memory.git/git-receive-pack"},
		{"GET", "/git/memory.git/info/refs"}, // the dumb protocol
		{"GET", "/git/memory.git/info/refs?service=git-upload-pack&service=git-receive-pack"},
	} {
		code, _ := do(t, e.srv.URL, c.method, c.path, tok)
		require.Equal(t, http.StatusForbidden, code, "%s %s", c.method, c.path)
	}
	for _, c := range []struct{ method, path string }{
		{"POST", "/git/memory.git/info/refs?service=git-upload-pack"},
		{"GET", "/git/memory.git/git-upload-pack"},
		{"PUT", "/git/memory.git/git-upload-pack"},
	} {
		code, _ := do(t, e.srv.URL, c.method, c.path, tok)
		require.Equal(t, http.StatusMethodNotAllowed, code, "%s %s", c.method, c.path)
	}
}

func TestGitEndpointAuth(t *testing.T) {
	e := setup(t)
	const refsPath = "/git/memory.git/info/refs?service=git-upload-pack"
	past, err := auth.NewSigner(secret, auth.WithSignerClock(func() time.Time { return time.Now().Add(-time.Hour) }))
	require.NoError(t, err)
	old, err := past.Mint("old", []auth.Role{auth.RoleService}, nil, time.Minute)
	require.NoError(t, err)
	other, err := auth.NewSigner([]byte("another-secret-another-secret-another-secret"))
	require.NoError(t, err)
	forged, err := other.Mint("forged", []auth.Role{auth.RoleService}, nil, time.Minute)
	require.NoError(t, err)

	for _, c := range []struct {
		name, header string
		want         int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"not bearer", "Basic dXNlcjpwYXNz", http.StatusUnauthorized},
		{"garbage", "Bearer not-a-jwt", http.StatusUnauthorized},
		{"expired", "Bearer " + old, http.StatusUnauthorized},
		{"other secret", "Bearer " + forged, http.StatusUnauthorized},
		{"agent", "Bearer " + e.token(t, auth.RoleAgent), http.StatusForbidden},
		{"reviewer", "Bearer " + e.token(t, auth.RoleReviewer), http.StatusForbidden},
		{"service", "Bearer " + e.token(t, auth.RoleService), http.StatusOK},
		{"admin", "Bearer " + e.token(t, auth.RoleAdmin), http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", e.srv.URL+refsPath, nil)
			require.NoError(t, err)
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			require.Equal(t, c.want, resp.StatusCode, string(body))
			switch c.want {
			case http.StatusUnauthorized:
				require.True(t, strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer "), resp.Header)
			case http.StatusOK:
				require.Equal(t, "application/x-git-upload-pack-advertisement", resp.Header.Get("Content-Type"))
			}
			if c.header != "" {
				require.NotContains(t, string(body), strings.TrimPrefix(c.header, "Bearer "))
			}
		})
	}

	// Two Authorization headers are ambiguous: refused.
	req, err := http.NewRequest("GET", e.srv.URL+refsPath, nil)
	require.NoError(t, err)
	req.Header.Add("Authorization", "Bearer "+e.token(t, auth.RoleService))
	req.Header.Add("Authorization", "Bearer "+e.token(t, auth.RoleAgent))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// git itself, without a token or with an agent's, gets nothing.
	for _, extra := range [][]string{nil, bearerEnv(e.token(t, auth.RoleAgent))} {
		out, err := gitErr("", extra, "ls-remote", e.url())
		require.Error(t, err, out)
		require.NotContains(t, out, git(t, "", "--git-dir", e.src.Path(), "rev-parse", "main"))
	}
}

func TestGitEndpointRejectsOtherPaths(t *testing.T) {
	e := setup(t)
	tok := e.token(t, auth.RoleAdmin)
	// Without the mux the handler sees the raw path: anything but its two
	// endpoints is 404, or 403 for the push and dumb-protocol ones.
	for _, p := range []string{
		"/git/../",
		"/git/..%2f..%2fetc%2fpasswd",
		"/git/memory.git/../../etc/passwd",
		"/git/memory.git/..%2F..%2Fetc%2Fpasswd",
		"/git/memory.git/info/refs/../../../config?service=git-upload-pack",
		"/git/%2e%2e/memory.git/info/refs?service=git-upload-pack",
		"/git/memory.git//info/refs?service=git-upload-pack",
		"/git/memory.git/./info/refs?service=git-upload-pack",
		"/git/other.git/info/refs?service=git-upload-pack",
		"/git/data/memory.git/info/refs?service=git-upload-pack",
		"/git/memory/info/refs?service=git-upload-pack",
		"/git/memory.git",
		"/git/memory.git/",
		"/git/memory.git/HEAD",
		"/git/memory.git/config",
		"/git/memory.git/objects/info/packs",
		"/git/memory.git/refs/heads/main",
		"/git/MEMORY.GIT/info/refs?service=git-upload-pack",
		"/etc/passwd",
	} {
		code, body := do(t, e.bare.URL, "GET", p, tok)
		require.Equal(t, http.StatusNotFound, code, "%s: %s", p, body)
		require.NotContains(t, body, "root:")
		require.NotContains(t, body, "[core]")

		// Through the mux: never served, whatever the mux makes of it.
		code, body = do(t, e.srv.URL, "GET", p, tok)
		require.Contains(t, []int{http.StatusNotFound, http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusTeapot}, code, "%s: %s", p, body)
		require.NotContains(t, body, "root:")
		require.NotContains(t, body, "[core]")
	}
}

// do sends one request with tok, following no redirect.
func do(t *testing.T, base, method, path, tok string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+"/x", nil)
	require.NoError(t, err)
	// Set the request URI verbatim, so neither the client nor url.Parse
	// cleans or re-escapes the path under test.
	req.URL.Opaque = path
	if i := strings.IndexByte(path, '?'); i >= 0 {
		req.URL.Opaque, req.URL.RawQuery = path[:i], path[i+1:]
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestGitFetchWithManyRefs: a clone that wants thousands of commits sends a request
// larger than git's http.postBuffer, which git sends chunked; CGI needs a
// length, so the handler buffers it.
func TestGitFetchWithManyRefs(t *testing.T) {
	e := setup(t)
	main := strings.TrimSpace(git(t, "", "--git-dir", e.src.Path(), "rev-parse", "main"))
	var stream strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&stream, "commit refs/heads/many/branch-%d\ncommitter t <t@example.com> 0 +0000\ndata 0\nfrom %s\n\n", i, main)
	}
	cmd := exec.Command("git", "--git-dir", e.src.Path(), "fast-import", "--quiet")
	cmd.Stdin = strings.NewReader(stream.String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))

	// A post buffer below the request's size (git allows no less than
	// 64 KiB), set in the environment the way the mirror passes its header:
	// the mirror must keep this setting and add its own.
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "http.postBuffer")
	t.Setenv("GIT_CONFIG_VALUE_0", "100000")
	m := memrepo.NewMirror(e.url(), filepath.Join(e.dir, "mirror.git"), memrepo.WithBearerToken(func() (string, error) {
		return e.token(t, auth.RoleService), nil
	}))
	require.NoError(t, m.Sync(context.Background()))
	require.Equal(t, refs(t, e.src.Path()), refs(t, m.Path()))
}
