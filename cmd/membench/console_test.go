package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every page of the table resolves from the seeded data, and a page
// whose placeholder has no value is an error naming it.
func TestConsolePagesResolve(t *testing.T) {
	vars := map[string]string{"agent": "agent-00007", "page10": "agent-00449", "commit": "abc123", "proposal": "prop_1", "entity": "svc payments", "decision": "adr-1"}
	for _, p := range consolePages {
		path, err := p.resolve(vars)
		require.NoError(t, err, p.Name)
		require.True(t, strings.HasPrefix(path, "/ui/"), path)
		require.NotContains(t, path, "{", p.Name)
	}
	got, err := consolePage{Name: "Entity", Path: "/ui/entities/{entity}"}.resolve(vars)
	require.NoError(t, err)
	require.Equal(t, "/ui/entities/svc%20payments", got, "values are path-escaped")
	_, err = consolePage{Name: "X", Path: "/ui/x/{nope}"}.resolve(vars)
	require.ErrorContains(t, err, "{nope}")
}

func TestPercentileAndServerTiming(t *testing.T) {
	v := make([]float64, 200)
	for i := range v {
		v[i] = float64(i + 1)
	}
	require.Equal(t, 100.0, percentile(v, 50))
	require.Equal(t, 190.0, percentile(v, 95))
	require.Equal(t, 198.0, percentile(v, 99))
	require.Equal(t, 7.0, percentile([]float64{7}, 95))

	d, ok := serverTiming(`db;dur=2.5, total;desc="all";dur=12.25`)
	require.True(t, ok)
	require.Equal(t, 12.25, d)
	_, ok = serverTiming("")
	require.False(t, ok)
}

// The budget: any page over 50 ms p95, or any answer other than
// 200, fails the run; an optional page not served yet does not.
func TestConsoleBudgetVerdict(t *testing.T) {
	ok := ConsolePageResult{Name: "Agents", N: 200, P95: 12, Statuses: map[string]int{"200": 200}}
	slow := ConsolePageResult{Name: "Inbox", N: 200, P95: 51, Statuses: map[string]int{"200": 200}}
	redirected := ConsolePageResult{Name: "Proposal", N: 200, P95: 3, Statuses: map[string]int{"200": 199, "303": 1}}
	absent := ConsolePageResult{Name: "Search", Absent: true}

	r := &ConsoleReport{BudgetMs: 50, Pages: []ConsolePageResult{ok, absent}}
	r.judge()
	require.True(t, r.Pass)
	require.Contains(t, r.Markdown(), "not served yet")

	r = &ConsoleReport{BudgetMs: 50, Pages: []ConsolePageResult{ok, slow, redirected}}
	r.judge()
	require.False(t, r.Pass)
	require.Len(t, r.Failures, 2)
	require.Contains(t, r.Failures[0], "Inbox: p95 51.0 ms > 50 ms")
	require.Contains(t, r.Failures[1], "303×1")
	require.Contains(t, r.Markdown(), "FAIL")
}

// The benchmark signs in as a browser does: the form's cookie and CSRF
// field, a same-origin POST, then the Secure session cookie on every page
// (over loopback http, as browsers allow). A page that sends to the
// sign-in form counts as a non-200 answer, not as a fast page.
func TestSignInLikeABrowserAndMeasure(t *testing.T) {
	secure := func(name, v string) *http.Cookie {
		return &http.Cookie{Name: name, Value: v, Path: "/ui/", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/login", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, secure("login", "form1"))
		_, _ = w.Write([]byte(`<form><input type="hidden" name="csrf" value="tok-form1"></form>`))
	})
	mux.HandleFunc("POST /ui/login", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("login")
		if err != nil || c.Value != "form1" || r.FormValue("csrf") != "tok-form1" || r.FormValue("token") != "T" ||
			r.Header.Get("Origin") != "http://"+r.Host {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		http.SetCookie(w, secure("session", "s1"))
		http.SetCookie(w, &http.Cookie{Name: "login", Path: "/ui/", MaxAge: -1})
		http.Redirect(w, r, r.FormValue("next"), http.StatusSeeOther)
	})
	mux.HandleFunc("GET /ui/", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("session"); err != nil || c.Value != "s1" {
			http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
			return
		}
		if _, err := r.Cookie("login"); err == nil {
			t.Error("the sign-in form's cookie outlived the sign-in")
		}
		w.Header().Set("Server-Timing", "total;dur=4.5")
		_, _ = w.Write([]byte(`<a href="/ui/agents/agent-00007/commits/0123456789abcdef0123456789abcdef01234567">c</a>`))
	})
	mux.HandleFunc("GET /ui/gone", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()

	_, err := signInConsole(ctx, srv.URL, "wrong")
	require.ErrorContains(t, err, "status 403")
	b, err := signInConsole(ctx, srv.URL, "T")
	require.NoError(t, err)
	sha, err := firstCommit(ctx, b, "agent-00007")
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdef0123456789abcdef01234567", sha)

	r, serverTimed, err := measurePage(ctx, b, consolePage{Name: "Agents", Path: "/ui/"}, "/ui/", 2, 10)
	require.NoError(t, err)
	require.True(t, serverTimed)
	require.Equal(t, 10, r.N)
	require.Equal(t, 4.5, r.P95)
	require.Equal(t, map[string]int{"200": 10}, r.Statuses)

	r, _, err = measurePage(ctx, b, consolePage{Name: "Search", Path: "/ui/gone", Optional: true}, "/ui/gone", 2, 10)
	require.NoError(t, err)
	require.True(t, r.Absent)

	signedOut := newBrowser(srv.URL)
	r, _, err = measurePage(ctx, signedOut, consolePage{Name: "Agents", Path: "/ui/"}, "/ui/", 0, 3)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"303": 3}, r.Statuses, "a redirect to sign in is not followed into a 200")
}

// A profile's report names the functions a page spends on, not the
// plumbing every call passes through.
func TestOwnFramesSkipsPlumbing(t *testing.T) {
	top := `Duration: 10s, Total samples = 9.44s (94.37%)
      flat  flat%   sum%        cum   cum%
         0     0%     0%      5.08s 53.81%  github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1._ContextAssemblyService_ListHistory_Handler.func1
         0     0%     0%      5.01s 53.07%  github.com/garden-bloom/memory/pkg/auth.UnaryServerInterceptor.func1
     0.01s  0.11%  0.64%      5.15s 54.56%  github.com/garden-bloom/memory/pkg/memrepo.(*Repo).Walk
     0.47s  5.16%  5.16%      2.39s 26.23%  reflect.Value.call
         0     0%  0.64%      5.11s 54.13%  github.com/garden-bloom/memory/services/contextassembly.(*handler).ListHistory`
	got := ownFrames(top, 1)
	require.Contains(t, got, "Duration: 10s")
	require.Contains(t, got, "memrepo.(*Repo).Walk")
	require.NotContains(t, got, "ListHistory", "only the first n frames")
	require.NotContains(t, got, "UnaryServerInterceptor")
	require.NotContains(t, got, "reflect.Value.call")
}
