package main

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
)

// Profiles are served on every process's HTTP listener, to admins only.
func TestPprofNeedsAnAdmin(t *testing.T) {
	d := startInProcessWith(t)
	get := func(path, tok string) (int, string) {
		req, err := http.NewRequest("GET", "http://"+d.httpAddr+path, nil)
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, _ := get("/debug/pprof/", "")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = get("/debug/pprof/heap?debug=1", token(t, d, auth.RoleService, auth.RoleReviewer, auth.RoleAgent))
	require.Equal(t, http.StatusForbidden, code)
	admin := token(t, d, auth.RoleAdmin)
	code, body := get("/debug/pprof/", admin)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "goroutine")
	code, body = get("/debug/pprof/heap?debug=1", admin)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "heap profile")
	code, _ = get("/debug/pprof/profile?seconds=1", admin)
	require.Equal(t, http.StatusOK, code)
}
