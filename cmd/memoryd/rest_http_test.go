package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/cmd/memoryd/app"
	"github.com/garden-bloom/memory/pkg/auth"
)

// These tests come from issue #24 points 3 and 5: nothing a client sends is
// silently ignored, and the REST edge answers as HTTP clients expect.

// proposeApproved proposes one fact for agent and approves it; it returns
// the proposal id.
func proposeApproved(t *testing.T, d *deployment, agent, fact string) string {
	t.Helper()
	svc := token(t, d, auth.RoleService)
	rev := token(t, d, auth.RoleReviewer)
	code, resp := jsonCall(t, d, "POST", "/memory/propose", `{"agentId":"`+agent+`","runId":"run_q1",
	  "updates":[{"file":"facts.md","operation":"append","section":"Notes","content":"- `+fact+`"}]}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	id := resp["proposalId"].(string)
	code, appr := jsonCall(t, d, "POST", "/proposals/"+id+":approve", `{}`, rev)
	require.Equal(t, http.StatusOK, code, appr)
	require.Eventually(t, func() bool {
		_, got := jsonCall(t, d, "GET", "/proposals/"+id, "", svc)
		return got["status"] == "applied"
	}, 20*time.Second, 10*time.Millisecond)
	return id
}

// TestRESTQueryParameters: an unknown query parameter is a 400 naming it;
// the agent filter is `agent` (spec integration §8) with `agentId` and
// `agent_id` as aliases on every path that has one.
func TestRESTQueryParameters(t *testing.T) {
	d := startInProcess(t)
	svc := token(t, d, auth.RoleService)
	proposeApproved(t, d, "qp-alpha", "The kumquat orchard is watered at dawn")
	id := proposeApproved(t, d, "qp-beta", "The kumquat crates ship on Fridays")
	require.Eventually(t, func() bool {
		_, res := jsonCall(t, d, "GET", "/memory/search?q=kumquat", "", svc)
		hits, _ := res["results"].([]any)
		return len(hits) == 2
	}, 20*time.Second, 20*time.Millisecond, "both agents' facts are searchable")

	t.Run("agent filter and its aliases", func(t *testing.T) {
		for _, name := range []string{"agent", "agentId", "agent_id"} {
			r := edgeCall(t, d, "GET", "/memory/search?q=kumquat&"+name+"=qp-alpha", nil, svc)
			require.Equal(t, http.StatusOK, r.status, r.raw)
			res := decode(t, r.raw)
			hits := res["results"].([]any)
			require.Len(t, hits, 1, "%s filters: %s", name, r.raw)
			require.Equal(t, "qp-alpha", hits[0].(map[string]any)["agentId"], name)

			r = edgeCall(t, d, "GET", "/proposals?"+name+"=qp-beta", nil, svc)
			require.Equal(t, http.StatusOK, r.status, r.raw)
			props := decode(t, r.raw)["proposals"].([]any)
			require.Len(t, props, 1, "%s filters: %s", name, r.raw)
			require.Equal(t, id, props[0].(map[string]any)["proposalId"])

			r = edgeCall(t, d, "GET", "/memory/context?"+name+"=qp-alpha&budget=5000", nil, svc)
			require.Equal(t, http.StatusOK, r.status, "%s: %s", name, r.raw)
		}
		r := edgeCall(t, d, "GET", "/memory/search?q=kumquat&agent=qp-alpha&agentId=qp-beta", nil, svc)
		require.Equal(t, http.StatusBadRequest, r.status, "two spellings of one parameter that disagree: %s", r.raw)
	})

	t.Run("unknown parameters are refused", func(t *testing.T) {
		tests := []struct {
			name, method, path, body string
			param                    string
			mention                  string // a suggestion the message carries
		}{
			{"layer on read", "GET", "/memory/qp-alpha/read?layer=2", "", "layer", "mode"},
			{"typo", "GET", "/memory/qp-alpha/read?maxTokns=100", "", "maxTokns", `did you mean "maxTokens"`},
			{"snake typo", "GET", "/memory/search?q=kumquat&top_kk=3", "", "top_kk", `did you mean "topK"`},
			{"case", "GET", "/memory/search?q=kumquat&TOPK=3", "", "TOPK", `did you mean "topK"`},
			{"no query on a body-star route", "POST", "/memory/qp-alpha/snapshot?label=x", `{}`, "label", ""},
			{"path parameter is not a query parameter", "GET", "/memory/qp-alpha/read?agentId=qp-beta", "", "agentId", ""},
			{"undocumented access_token", "GET", "/memory/index/status?access_token=x", "", "access_token", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var r edgeResponse
				if tt.body != "" {
					r = edgeCall(t, d, tt.method, tt.path, strings.NewReader(tt.body), token(t, d, auth.RoleAdmin))
				} else {
					r = edgeCall(t, d, tt.method, tt.path, nil, svc)
				}
				require.Equal(t, http.StatusBadRequest, r.status, r.raw)
				require.Equal(t, "INVALID_ARGUMENT", r.reason(), r.raw)
				require.Contains(t, r.err.Message, `"`+tt.param+`"`, r.raw)
				require.Equal(t, tt.param, r.err.Details[0].Metadata["parameter"], r.raw)
				require.Contains(t, r.err.Message, tt.mention, r.raw)
			})
		}
	})

	t.Run("known parameters keep working", func(t *testing.T) {
		for _, path := range []string{
			"/memory/search?q=kumquat&kinds=facts&kinds=snapshot&top_k=3&topK=3", // repeated; proto and JSON names
			"/memory/qp-alpha/read?mode=wide&max_tokens=9000&excludeFiles=open_loops.md",
			"/memory/qp-alpha/read?mode=READ_MODE_BASIC",
			"/proposals?status=applied&agent=qp-alpha",
			"/memory/layer2?agent=qp-alpha&include=changelog&include=decisions",
			"/memory/qp-alpha/diff?files=facts.md&format=unified",
		} {
			r := edgeCall(t, d, "GET", path, nil, svc)
			require.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.raw)
		}
		r := edgeCall(t, d, "GET", "/memory/search?q=kumquat&agent=qp-alpha&agent_id=qp-alpha", nil, svc)
		require.Equal(t, http.StatusOK, r.status, "two spellings that agree: %s", r.raw)
	})
}

// TestRESTHTTPSemantics: 405 with Allow, 404 NOT_FOUND, 409 for invalid
// transitions, RFC 6750 challenges.
func TestRESTHTTPSemantics(t *testing.T) {
	d := startInProcess(t)
	svc := token(t, d, auth.RoleService)
	rev := token(t, d, auth.RoleReviewer)

	t.Run("wrong method is 405 with Allow", func(t *testing.T) {
		for _, tt := range []struct{ method, path, allow string }{
			{"PUT", "/memory/search", "GET"},
			{"DELETE", "/memory/search?q=x", "GET"},
			{"GET", "/memory/propose", "POST"},
			{"PUT", "/memory/x/read", "GET"},
			{"GET", "/proposals/proposal_x:approve", "POST"},
		} {
			r := edgeCall(t, d, tt.method, tt.path, nil, svc)
			require.Equal(t, http.StatusMethodNotAllowed, r.status, "%s %s: %s", tt.method, tt.path, r.raw)
			require.Contains(t, strings.Split(strings.ReplaceAll(r.header.Get("Allow"), " ", ""), ","), tt.allow, "%s %s", tt.method, tt.path)
			require.Equal(t, "METHOD_NOT_ALLOWED", r.reason(), r.raw)
		}
	})

	t.Run("unknown path is 404 NOT_FOUND", func(t *testing.T) {
		for _, p := range []string{"/nope", "/memory/a/b/c/d", "/proposals/x/y"} {
			r := edgeCall(t, d, "GET", p, nil, svc)
			require.Equal(t, http.StatusNotFound, r.status, "%s: %s", p, r.raw)
			require.Equal(t, "NOT_FOUND", r.reason(), r.raw)
			require.Equal(t, 5, r.err.Code, "gRPC NotFound in the body: %s", r.raw)
		}
	})

	t.Run("approve twice is 409", func(t *testing.T) {
		id := proposeApproved(t, d, "sem-twice", "Approved once")
		r := edgeCall(t, d, "POST", "/proposals/"+id+":approve", strings.NewReader(`{}`), rev)
		require.Equal(t, http.StatusConflict, r.status, r.raw)
		require.Equal(t, "INVALID_TRANSITION", r.reason(), r.raw)
	})

	t.Run("corrupted memory is 500", func(t *testing.T) {
		proposeApproved(t, d, "sem-corrupt", "Soon broken")
		// Break the snapshot with plain git, as a hand edit would.
		work := t.TempDir()
		git := func(args ...string) {
			out, err := exec.Command("git", append([]string{"-C", work, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
			require.NoError(t, err, "%s", out)
		}
		git("clone", "-q", "-b", "main", filepath.Join(d.dataDir, "memory.git"), ".")
		require.NoError(t, os.WriteFile(filepath.Join(work, "memory/sem-corrupt/snapshot.md"), []byte("   \n"), 0o644))
		git("add", "-A")
		git("commit", "-qm", "oops")
		git("push", "-q", "origin", "main")
		var r edgeResponse
		require.Eventually(t, func() bool {
			r = edgeCall(t, d, "GET", "/memory/sem-corrupt/read", nil, svc)
			return r.status != http.StatusOK
		}, 20*time.Second, 20*time.Millisecond)
		require.Equal(t, http.StatusInternalServerError, r.status, r.raw)
		require.Equal(t, "MEMORY_CORRUPTED", r.reason(), r.raw)
	})

	t.Run("WWW-Authenticate per RFC 6750", func(t *testing.T) {
		r := edgeCall(t, d, "GET", "/memory/search?q=x", nil, "")
		require.Equal(t, http.StatusUnauthorized, r.status, r.raw)
		require.Equal(t, `Bearer realm="garden-bloom-memory"`, r.header.Get("WWW-Authenticate"), "no error when no token was sent")

		r = edgeCall(t, d, "GET", "/memory/search?q=x", nil, svc[:len(svc)-4]+"AAAA")
		require.Equal(t, http.StatusUnauthorized, r.status, r.raw)
		h := r.header.Get("WWW-Authenticate")
		require.True(t, strings.HasPrefix(h, `Bearer realm="garden-bloom-memory", error="invalid_token", error_description="`), h)

		r = edgeCall(t, d, "GET", "/memory/search?q=x", nil, expiredToken(t, d))
		require.Equal(t, http.StatusUnauthorized, r.status, r.raw)
		require.Contains(t, r.header.Get("WWW-Authenticate"), `error="invalid_token"`)

		r = edgeCall(t, d, "POST", "/memory/reindex", strings.NewReader(`{}`), svc)
		require.Equal(t, http.StatusForbidden, r.status, r.raw)
		require.True(t, strings.HasPrefix(r.header.Get("WWW-Authenticate"), `Bearer realm="garden-bloom-memory", error="insufficient_scope"`), r.header.Get("WWW-Authenticate"))
	})
}

// TestRESTCORS: CORS is off by default; with an allow-list, a preflight from
// an allowed origin is answered and one from another origin is not.
func TestRESTCORS(t *testing.T) {
	preflight := func(t *testing.T, d *deployment, origin, path string) *http.Response {
		req, err := http.NewRequest("OPTIONS", "http://"+d.httpAddr+path, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "GET")
		req.Header.Set("Access-Control-Request-Headers", "authorization")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp
	}

	off := startInProcess(t)
	resp := preflight(t, off, "https://app.example", "/memory/search")
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), "off by default")

	d := startInProcessWith(t, "--cors-allowed-origins", "https://app.example,https://admin.example")
	resp = preflight(t, d, "https://app.example", "/memory/search")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "https://app.example", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "GET")
	require.Contains(t, strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "authorization")
	require.Contains(t, resp.Header.Values("Vary"), "Origin")
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Credentials"), "credentials only when configured")

	resp = preflight(t, d, "https://evil.example", "/memory/search")
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Methods"))

	// A simple request from an allowed origin carries the header on the answer, errors included.
	req, err := http.NewRequest("GET", "http://"+d.httpAddr+"/memory/search?q=x", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://admin.example")
	got, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = got.Body.Close()
	require.Equal(t, http.StatusUnauthorized, got.StatusCode)
	require.Equal(t, "https://admin.example", got.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, got.Header.Values("Vary"), "Origin")

	creds := startInProcessWith(t, "--cors-allowed-origins", "https://app.example", "--cors-allow-credentials")
	resp = preflight(t, creds, "https://app.example", "/memory/search")
	require.Equal(t, "true", resp.Header.Get("Access-Control-Allow-Credentials"))
}

func decode(t *testing.T, raw string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &m), raw)
	return m
}
func TestCORSFlags(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	cfg, _, err := app.LoadConfig([]string{"--data-dir", t.TempDir()}, noEnv)
	require.NoError(t, err)
	require.Empty(t, cfg.Gateway.CORS.AllowedOrigins)
	require.False(t, cfg.Gateway.CORS.AllowCredentials)

	cfg, _, err = app.LoadConfig([]string{"--data-dir", t.TempDir(), "--cors-allowed-origins", "https://a.example, https://b.example"}, noEnv)
	require.NoError(t, err)
	require.Equal(t, []string{"https://a.example", "https://b.example"}, cfg.Gateway.CORS.AllowedOrigins)

	for _, bad := range []string{"*", "a.example", "https://a.example/path"} {
		_, _, err = app.LoadConfig([]string{"--data-dir", t.TempDir(), "--cors-allowed-origins", bad}, noEnv)
		require.Error(t, err, bad)
	}
	_, _, err = app.LoadConfig([]string{"--data-dir", t.TempDir(), "--cors-allow-credentials"}, noEnv)
	require.Error(t, err, "credentials without origins")
}
