package app

import (
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
)

// Issue #28: a `console` module served by the edge at /ui/, on by default
// in `all` (and `read`, with the other edges), off with a flag.
func TestConsoleTarget(t *testing.T) {
	for _, target := range []string{"all", "read", "console", "gateway,console"} {
		names, err := (&App{}).table().Expand(target)
		require.NoError(t, err, target)
		require.Contains(t, names, string(ModuleConsole), target)
	}
	names, err := (&App{}).table().Expand("write")
	require.NoError(t, err)
	require.NotContains(t, names, string(ModuleConsole), "the write plane serves no edge")
	require.True(t, Modules{ModuleConsole}.Edge())

	_, _, err = LoadConfig([]string{"--target", "console", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0"},
		func(string) (string, bool) { return "", false })
	require.ErrorContains(t, err, "but not proposal-apply: set --proposal-apply-addr")
	_, _, err = LoadConfig([]string{"--data-dir", t.TempDir(), "--console-poll", "1ms"}, func(string) (string, bool) { return "", false })
	require.ErrorContains(t, err, "--console-poll")
}

// noRedirects looks at each answer itself.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, u string, cookie *http.Cookie) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	require.NoError(t, err)
	if cookie != nil {
		req.AddCookie(cookie)
	}
	resp, err := noRedirects.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestConsoleOffLeavesUIUnserved(t *testing.T) {
	on := startApp(t, "--data-dir", t.TempDir())
	resp, _ := get(t, "http://"+on.HTTPAddr()+"/ui/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "on by default: sign in first")
	require.Equal(t, "/ui/login?next=%2Fui%2F", resp.Header.Get("Location"))

	off := startApp(t, "--data-dir", t.TempDir(), "--console=false")
	resp, body := get(t, "http://"+off.HTTPAddr()+"/ui/", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "off: the REST edge's 404")
	require.Contains(t, body, "NOT_FOUND")
}

// The session cookie holds no server state: one edge replica signs a
// person in, another (sharing the auth secret) serves them.
func TestConsoleSessionsWorkAcrossEdgeReplicas(t *testing.T) {
	servicesDir := t.TempDir()
	services := startApp(t, "--data-dir", servicesDir, "--target", "write,entity-graph,search-index,context-assembly")
	secret := filepath.Join(servicesDir, "auth.secret")
	peer := services.GRPCAddr()
	edge := func() *App {
		return startApp(t, "--target", "console", "--data-dir", t.TempDir(), "--auth-secret-file", secret,
			"--proposal-apply-addr", peer, "--entity-graph-addr", peer, "--search-index-addr", peer, "--context-assembly-addr", peer)
	}
	one, two := edge(), edge()

	key, err := auth.LoadSecret(secret)
	require.NoError(t, err)
	signer, err := auth.NewSigner(key)
	require.NoError(t, err)
	tok, err := signer.Mint("rita", []auth.Role{auth.RoleReviewer}, nil, time.Hour)
	require.NoError(t, err)

	resp, page := get(t, "http://"+one.HTTPAddr()+"/ui/login", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var login *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "gbm_login" {
			login = c
		}
	}
	require.NotNil(t, login)
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, csrf)
	req, err := http.NewRequest("POST", "http://"+one.HTTPAddr()+"/ui/login", strings.NewReader(url.Values{"csrf": {csrf[1]}, "token": {tok}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(login)
	resp, err = noRedirects.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "gbm_session" {
			session = c
		}
	}
	require.NotNil(t, session)

	resp, page = get(t, "http://"+two.HTTPAddr()+"/ui/inbox", session)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "Nothing waits for a person.")
	require.Contains(t, page, "rita")
}
