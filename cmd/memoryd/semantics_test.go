package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// Issue #23, through the real REST edge as a gateway team would call it:
// `GET /memory/{id}/read?mode=basic&maxTokens=100` returns at most 100
// tokens or a precise 400, and a body agentId that differs from the path is
// refused instead of being silently overridden.
func TestRESTMemorySemantics(t *testing.T) {
	d := startInProcessWith(t, "--auto-approve-default")
	tok := token(t, d, auth.RoleAdmin, auth.RoleReviewer, auth.RoleService)

	// A realistic agent: a long snapshot and some facts and loops.
	snapshot := "# Snapshot: rest-agent\n\n## Role\n" + strings.Repeat("Curates the garden and keeps its notes in order. ", 120) + "\n"
	body := fmt.Sprintf(`{"runId":"run_a","updates":[
		{"file":"snapshot.md","operation":"replace","content":%q},
		{"file":"facts.md","operation":"append","section":"Technical","content":"- MinIO bucket mcpstorage has versioning on"},
		{"file":"open_loops.md","operation":"open","content":"Confirm the proposal lifecycle","loopPriority":"low"}],
		"reasoning":"set up","priority":"normal"}`, snapshot)
	r := edgeCall(t, d, "POST", "/memory/rest-agent/propose", strings.NewReader(body), tok)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var prop struct {
		ProposalID string `json:"proposalId"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.raw), &prop))
	require.Eventually(t, func() bool {
		r := edgeCall(t, d, "GET", "/proposals/"+prop.ProposalID, nil, tok)
		return strings.Contains(r.raw, `"applied"`)
	}, 20*time.Second, 20*time.Millisecond)

	counter, err := tokens.New("")
	require.NoError(t, err)
	for _, max := range []int{1, 10, 50, 100, 500, 1000, 4000} {
		r := edgeCall(t, d, "GET", fmt.Sprintf("/memory/rest-agent/read?mode=basic&maxTokens=%d", max), nil, tok)
		if r.status == http.StatusBadRequest {
			require.Equal(t, "INVALID_ARGUMENT", r.reason(), r.raw)
			require.Contains(t, r.err.Message, "smallest budget", r.raw)
			require.NotContains(t, r.err.Message, "-", "no negative budget in a message: %s", r.err.Message)
			continue
		}
		require.Equal(t, http.StatusOK, r.status, r.raw)
		var read struct {
			TokenCount int               `json:"tokenCount"`
			Content    map[string]string `json:"content"`
			Warnings   []string          `json:"warnings"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.raw), &read))
		require.LessOrEqual(t, read.TokenCount, max, "maxTokens=%d: %s", max, r.raw)
		// What an agent reads — every file's name and text, every warning —
		// is within the budget by our tokenizer too.
		total := 0
		for name, text := range read.Content {
			total += counter.Count(name) + counter.Count(text)
		}
		for _, w := range read.Warnings {
			total += counter.Count(w)
		}
		require.LessOrEqual(t, total, max, "maxTokens=%d: %s", max, r.raw)
	}
	r = edgeCall(t, d, "GET", "/memory/rest-agent/read?mode=basic&maxTokens=100", nil, tok)
	if r.status == http.StatusBadRequest {
		require.NotEmpty(t, r.err.Details[0].Metadata["min"], "the 400 names the smallest budget that works: %s", r.raw)
	}

	// The body names another agent than the path: 400, nothing stored.
	r = edgeCall(t, d, "POST", "/memory/rest-agent/propose", strings.NewReader(`{"agentId":"someone-else","runId":"run_b",
		"updates":[{"file":"facts.md","operation":"append","section":"Technical","content":"- x"}]}`), tok)
	require.Equal(t, http.StatusBadRequest, r.status, r.raw)
	require.Contains(t, r.err.Message, "someone-else")
	require.Equal(t, "agentId", r.err.Details[0].Metadata["field"])
	list := edgeCall(t, d, "GET", "/proposals?agent=someone-else", nil, tok)
	require.NotContains(t, list.raw, "proposal_", "nothing stored for the other agent")
	// The same agent in body and path is fine.
	r = edgeCall(t, d, "POST", "/memory/rest-agent/propose", strings.NewReader(`{"agentId":"rest-agent","runId":"run_b",
		"updates":[{"file":"facts.md","operation":"append","section":"Technical","content":"- x"}]}`), tok)
	require.Equal(t, http.StatusOK, r.status, r.raw)
}
