package main

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
)

// ttlList is a JSON array as a list (nil when absent).
func ttlList(v any) []any {
	l, _ := v.([]any)
	return l
}

// agentToken is a token of the agent role for the given agents only.
func agentToken(t *testing.T, d *deployment, agents ...string) string {
	t.Helper()
	secret, err := auth.LoadSecret(filepath.Join(d.dataDir, "auth.secret"))
	require.NoError(t, err)
	s, err := auth.NewSigner(secret)
	require.NoError(t, err)
	tok, err := s.Mint("agent-run", []auth.Role{auth.RoleAgent}, agents, time.Hour)
	require.NoError(t, err)
	return tok
}

// Fact TTL through a real memoryd's REST edge (memory-bridge §4): markers
// proposed by an agent, the stale-facts report before and after the
// scheduler acts, the read warning, SetFactTTL, and the refusals.
func TestFactTTLOverREST(t *testing.T) {
	d := startInProcessWith(t, "--ttl-interval", "1s", "--auto-approve-default")
	svc := token(t, d, auth.RoleService)
	own := agentToken(t, d, "ttl-agent")

	code, resp := jsonCall(t, d, "POST", "/memory/ttl-agent/propose", `{"runId": "run_seed", "updates": [
	  {"file": "facts.md", "operation": "append", "section": "Infra", "content":
	    "- The staging DB is pg15 _(expires 2020-01-01T00:00:00Z, then archive)_\n- Redis runs 7.2 _(expires 2020-02-01T00:00:00Z)_\n- Carol reviews proposals"}]}`, own)
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, "approved", resp["status"], resp)
	seed := resp["proposalId"].(string)
	require.Eventually(t, func() bool {
		_, p := jsonCall(t, d, "GET", "/proposals/"+seed, "", svc)
		if p["status"] != "applied" {
			return false
		}
		code, _, _ := call(t, d, "GET", "/v1/memory/ttl-agent/stale-facts", "", own)
		return code == http.StatusOK // the read plane has the commit
	}, 20*time.Second, 20*time.Millisecond)

	// Before the scheduler acts, both run-out facts are reported…
	code, stale := jsonCall(t, d, "GET", "/v1/memory/ttl-agent/stale-facts", "", own)
	require.Equal(t, http.StatusOK, code, stale)
	facts := ttlList(stale["facts"])
	if len(facts) == 2 { // the scheduler may already have acted: checked below either way
		first := facts[0].(map[string]any)
		require.Equal(t, "- The staging DB is pg15 _(expires 2020-01-01T00:00:00Z, then archive)_", first["fact"])
		require.Equal(t, "archive", first["onExpire"])
		require.Equal(t, "2020-01-01T00:00:00Z", first["expiresAt"])
		require.Equal(t, "Infra", first["section"])
	}

	// …then the scheduler applies their actions in one commit.
	require.Eventually(t, func() bool {
		_, stale = jsonCall(t, d, "GET", "/v1/memory/ttl-agent/stale-facts?include_archived=true", "", own)
		return len(ttlList(stale["facts"])) == 2 && ttlList(stale["facts"])[0].(map[string]any)["archived"] == true
	}, 20*time.Second, 50*time.Millisecond, "%v", stale)
	facts = ttlList(stale["facts"])
	archived, marked := facts[0].(map[string]any), facts[1].(map[string]any)
	require.Equal(t, "- The staging DB is pg15", archived["fact"])
	require.Equal(t, "Expired facts", archived["section"])
	require.Equal(t, "- Redis runs 7.2 _(stale since 2020-02-01T00:00:00Z)_", marked["fact"])
	require.Equal(t, true, marked["markedStale"])
	log, err := exec.Command("git", "--git-dir", filepath.Join(d.dataDir, "memory.git"), "log", "--format=%s%n%b", "main").CombinedOutput()
	require.NoError(t, err, "%s", log)
	require.Equal(t, 1, strings.Count(string(log), "Reason: Fact TTL expiry"), "%s", log)
	require.Contains(t, string(log), `Reason: Fact TTL expiry (2): archive "The staging DB is pg15"; mark_stale "Redis runs 7.2"`)

	// The read warns of the stale fact it returns.
	require.Eventually(t, func() bool {
		_, read := jsonCall(t, d, "GET", "/memory/ttl-agent/read?mode=wide", "", own)
		for _, w := range ttlList(read["warnings"]) {
			if w == "1 fact is past its TTL or stale (GET /v1/memory/ttl-agent/stale-facts)" {
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond)

	// SetFactTTL gives a fact a TTL through a proposal.
	before := time.Now()
	code, set := jsonCall(t, d, "POST", "/v1/memory/ttl-agent/facts:ttl", `{"fact": "Carol reviews proposals", "ttl": "3600s", "onExpire": "delete"}`, own)
	require.Equal(t, http.StatusOK, code, set)
	expires, err := time.Parse(time.RFC3339, set["expiresAt"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(time.Hour), expires, 5*time.Second)
	proposal := set["proposal"].(map[string]any)
	id := proposal["proposalId"].(string)
	require.Eventually(t, func() bool {
		_, p := jsonCall(t, d, "GET", "/proposals/"+id, "", svc)
		return p["status"] == "applied"
	}, 20*time.Second, 20*time.Millisecond)
	_, read := jsonCall(t, d, "GET", "/memory/ttl-agent/read?mode=wide", "", own)
	require.Contains(t, read["content"].(map[string]any)["facts.md"], "- Carol reviews proposals _(expires "+expires.UTC().Format("2006-01-02T15:04:05Z")+", then delete)_")

	// Refusals: another agent's token, a bad ttl, a malformed marker.
	other := agentToken(t, d, "someone-else")
	code, _, raw := call(t, d, "GET", "/v1/memory/ttl-agent/stale-facts", "", other)
	require.Equal(t, http.StatusForbidden, code, raw)
	code, _, raw = call(t, d, "POST", "/v1/memory/ttl-agent/facts:ttl", `{"fact": "Carol reviews proposals", "ttl": "3600s"}`, other)
	require.Equal(t, http.StatusForbidden, code, raw)
	code, e, raw := call(t, d, "POST", "/v1/memory/ttl-agent/facts:ttl", `{"fact": "Carol reviews proposals", "ttl": "-5s"}`, own)
	require.Equal(t, http.StatusBadRequest, code, raw)
	require.Equal(t, "INVALID_ARGUMENT", e.Details[0].Reason, raw)
	require.Contains(t, raw, `"field":"ttl"`)
	code, e, raw = call(t, d, "POST", "/memory/ttl-agent/propose", `{"runId": "run_bad", "updates": [
	  {"file": "facts.md", "operation": "append", "section": "Infra", "content": "- x _(expires soon, then archive)_"}]}`, own)
	require.Equal(t, http.StatusBadRequest, code, raw)
	require.Equal(t, "INVALID_CONTENT", e.Details[0].Reason, raw)
	require.Contains(t, raw, `time \"soon\" is not RFC 3339`)
}
