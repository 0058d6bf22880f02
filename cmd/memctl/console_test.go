package main

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// browserGet fetches url as a browser that keeps cookies by hand (Go's
// cookie jar drops Secure cookies on plain http, even to loopback, where
// browsers keep them) and follows no redirect.
func browserGet(t *testing.T, method, u string, form url.Values, cookies []*http.Cookie) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// Issue #28: "memctl console opens the browser with a one-time code": the
// link it opens, against a real memoryd, signs a browser in as memctl's
// token after one click — once.
func TestConsoleOpensASignedInBrowser(t *testing.T) {
	s := server(t)
	c := memctlFor(t, s, s.operator(t))
	base := "http://" + s.httpAddr

	// $BROWSER is what opens the link: a script that writes it down.
	opened := filepath.Join(t.TempDir(), "opened")
	script := filepath.Join(t.TempDir(), "browser.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+opened+"\n"), 0o755))
	c.env["BROWSER"] = script
	doc := c.jsonOK("console", "--url", base+"/")
	require.Equal(t, true, doc["opened"])
	link := doc["url"].(string)
	require.True(t, strings.HasPrefix(link, base+"/ui/login?code="), link)
	got, err := os.ReadFile(opened)
	require.NoError(t, err)
	require.Equal(t, link, string(got), "the browser got the link")

	// The browser: the page asks, the click signs in, the inbox opens.
	resp, page := browserGet(t, "GET", link, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "Continue as operator")
	var login *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "gbm_login" || strings.Contains(ck.Name, "login") {
			login = ck
		}
	}
	require.NotNil(t, login, "the sign-in form's cookie")
	field := func(name string) string {
		m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(page)
		require.NotNil(t, m, name)
		return m[1]
	}
	form := url.Values{"csrf": {field("csrf")}, "code": {field("code")}, "next": {"/ui/inbox"}}
	resp, _ = browserGet(t, "POST", base+"/ui/login", form, []*http.Cookie{login})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var sess *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Value != "" && ck.Name != login.Name {
			sess = ck
		}
	}
	require.NotNil(t, sess)
	resp, page = browserGet(t, "GET", base+"/ui/inbox", nil, []*http.Cookie{sess})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "operator")
	resp, _ = browserGet(t, "POST", base+"/ui/login", form, []*http.Cookie{login})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the link works once")

	// --no-browser prints the link; the table says how long it works.
	delete(c.env, "BROWSER")
	r := c.ok("console", "--url", base, "--no-browser")
	require.Contains(t, r.stdout, base+"/ui/login?code=")
	require.NotContains(t, r.stdout, "…", "the link whole, not clipped like a table cell")
	require.Contains(t, r.stdout, "works once, until")

	// A browser that cannot start: the link is still printed, and why.
	c.env["BROWSER"] = filepath.Join(t.TempDir(), "no-such-browser")
	r = c.ok("console", "--url", base)
	require.Contains(t, r.stdout, base+"/ui/login?code=")
	require.Contains(t, r.stderr, "could not open a browser")

	// Errors: a refused token, no console there, nobody there, no token,
	// an embedded store, a URL that is not one.
	bad := memctlFor(t, s, "not-a-token")
	bad.fails(exitDenied, "UNAUTHENTICATED", "console", "--url", base, "--no-browser")
	c.fails(exitNotFound, "NOT_FOUND", "console", "--url", base+"/elsewhere", "--no-browser")
	c.fails(exitUnavailable, "UNAVAILABLE", "console", "--url", "http://127.0.0.1:1", "--no-browser")
	none := memctlFor(t, s, "")
	delete(none.env, envToken)
	none.fails(exitUsage, "USAGE", "console", "--url", base)
	c.fails(exitUsage, "USAGE", "--data-dir", t.TempDir(), "console")
	c.fails(exitUsage, "USAGE", "console", "--url", "127.0.0.1:8080")
	start := time.Now()
	c.ok("console", "--help")
	require.Less(t, time.Since(start), time.Minute)
}
