package main

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
)

// The entity graph's typed episode nodes and edges through the REST edge of
// a real memoryd (ai-skills-memory-protocol §4.1–4.2): a run file applied
// through the write plane becomes Episode —used_skill→ Skill and the rest,
// and GET /entities/{id}/neighbors?relations=used_skill filters by the
// lowercase relation names the REST contract uses.
func TestEpisodeGraphOverREST(t *testing.T) {
	d := startInProcess(t)
	svc := token(t, d, auth.RoleService)
	rev := token(t, d, auth.RoleReviewer)

	// A run file in the exact format IngestEpisode writes, proposed as an
	// ordinary write_run so the graph is tested on the contract alone.
	run := "# Episode ep-rest-1\n\n" +
		"- **Episode:** [[episode:ep-rest-1]]\n" +
		"- **When:** 2026-02-17T09:00:00Z\n" +
		"- **Task:** [[task:task-1a2b3c4d|Fix the refund rounding bug]]\n" +
		"- **Outcome:** [[outcome:failure]] (severity: high) — still off by a cent\n" +
		"- **Context:** [[context:backend/payments/refunds]]\n" +
		"- **Skills used:** [[skill:go-testing]], [[skill:debugging]]\n" +
		"- **Artifacts touched:** [[artifact:services/payments/refund.go]]\n" +
		"- **Failure mode:** [[failure-mode:nil pointer dereference]]\n" +
		"- **Fix:** [[fix:check the refund before use]]\n" +
		"- **Tests:** [[test:TestRefundRounding]] pass (120 ms)\n" +
		"- **Environment:** [[environment:linux-go1-24]] linux, go1.24\n" +
		"- **Duration:** 45s\n\n## Summary\n\nThe refund was nil.\n"
	body, err := json.Marshal(map[string]any{"runId": "run_ep-rest-1", "updates": []map[string]string{
		{"file": "runs/run_ep-rest-1.md", "operation": "write_run", "content": run}}})
	require.NoError(t, err)
	code, resp := jsonCall(t, d, "POST", "/memory/coder/propose", string(body), svc)
	require.Equal(t, http.StatusOK, code, resp)
	code, resp = jsonCall(t, d, "POST", "/proposals/"+resp["proposalId"].(string)+":approve", `{}`, rev)
	require.Equal(t, http.StatusOK, code, resp)

	var nb map[string]any
	require.Eventually(t, func() bool {
		code, nb = jsonCall(t, d, "GET", "/entities/go-testing/neighbors?depth=1&relations=used_skill", "", svc)
		return code == http.StatusOK && len(asList(nb["edges"])) > 0
	}, 20*time.Second, 20*time.Millisecond, "the graph follows the commit")
	edges := asList(nb["edges"])
	require.Len(t, edges, 1, nb)
	e := edges[0].(map[string]any)
	require.Equal(t, "used_skill", e["relation"])
	require.Equal(t, "episode-ep-rest-1", e["fromEntityId"])
	require.Equal(t, "go-testing", e["toEntityId"])
	ev := asList(e["evidence"])[0].(map[string]any)
	require.Equal(t, "memory/coder/runs/run_ep-rest-1.md", ev["file"])
	ents := asList(nb["entities"])
	require.Len(t, ents, 1)
	require.Equal(t, "episode", ents[0].(map[string]any)["type"])

	code, ep := jsonCall(t, d, "GET", "/entities/episode-ep-rest-1", "", svc)
	require.Equal(t, http.StatusOK, code, ep)
	var rels []string
	for _, x := range asList(ep["edges"]) {
		ed := x.(map[string]any)
		if ed["relation"] != "mentions" {
			rels = append(rels, ed["fromEntityId"].(string)+" "+ed["relation"].(string)+" "+ed["toEntityId"].(string))
		}
	}
	sort.Strings(rels)
	require.Equal(t, []string{
		"episode-ep-rest-1 in_context context-backend-payments-refunds",
		"episode-ep-rest-1 ran_in environment-linux-go1-24",
		"episode-ep-rest-1 ran_test test-testrefundrounding",
		"episode-ep-rest-1 resulted_in outcome-failure",
		"episode-ep-rest-1 touched_artifact services-payments-refund-go",
		"episode-ep-rest-1 used_skill debugging",
		"episode-ep-rest-1 used_skill go-testing",
		"task-1a2b3c4d has_episode episode-ep-rest-1",
	}, rels)

	code, fm := jsonCall(t, d, "GET", "/entities/failure-mode-nil-pointer-dereference/neighbors?relations=has_failure_mode&relations=mitigated_by", "", svc)
	require.Equal(t, http.StatusOK, code, fm)
	types := map[string]string{}
	for _, x := range asList(fm["entities"]) {
		n := x.(map[string]any)
		types[n["entity_id"].(string)] = n["type"].(string)
	}
	require.Equal(t, map[string]string{"outcome-failure": "outcome", "fix-check-the-refund-before-use": "fix"}, types)
	code, fmNode := jsonCall(t, d, "GET", "/entities/failure-mode-nil-pointer-dereference", "", svc)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "failure_mode", fmNode["entity"].(map[string]any)["type"])

	code, list := jsonCall(t, d, "GET", "/entities?type=context", "", svc)
	require.Equal(t, http.StatusOK, code, list)
	var contexts []string
	for _, x := range asList(list["entities"]) {
		contexts = append(contexts, x.(map[string]any)["label"].(string))
	}
	require.Equal(t, []string{"backend", "backend/payments", "backend/payments/refunds"}, contexts)

	code, chain := jsonCall(t, d, "GET", "/entities/context-backend-payments-refunds/neighbors?depth=3&relations=child_of", "", svc)
	require.Equal(t, http.StatusOK, code, chain)
	require.Len(t, asList(chain["edges"]), 2)

	code, _, raw := call(t, d, "GET", "/entities/go-testing/neighbors?relations=used_skills", "", svc)
	require.Equal(t, http.StatusBadRequest, code, raw)
	require.Contains(t, raw, "used_skill", "the error lists the relations")
}

// asList is a JSON array, or nil.
func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// IngestEpisode end to end: the episode JSON of the spec's §12 example,
// verbatim, posted to the REST path becomes a run file whose typed edges
// the graph derives.
func TestIngestedEpisodeReachesTheGraph(t *testing.T) {
	d := startInProcess(t)
	svc := token(t, d, auth.RoleService)
	rev := token(t, d, auth.RoleReviewer)
	spec := `{
  "timestamp": "2025-12-30T13:00:00+02:00",
  "task_text": "Design local DB-first AI Skills memory protocol",
  "summary": "Updated protocol to SQLite graph + Chroma vectors + Ollama embeddings",
  "used_skills": ["docs", "memory-design"],
  "touched_artifacts": ["ai_skills/skills_graph_concept.md"],
  "outcome": {"status": "success", "notes": "Spec updated"},
  "errors": [],
  "tests": []
}`
	code, _, raw := call(t, d, "POST", "/v1/memory/designer/episodes", spec, svc)
	require.Equal(t, http.StatusOK, code, raw)
	var resp map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &resp))
	proposal, _ := resp["proposal"].(map[string]any)
	require.NotNil(t, proposal, raw)
	if proposal["status"] != "applied" {
		code, r := jsonCall(t, d, "POST", "/proposals/"+proposal["proposalId"].(string)+":approve", `{}`, rev)
		require.Equal(t, http.StatusOK, code, r)
	}
	episodeID, _ := resp["episodeId"].(string)
	if episodeID == "" {
		episodeID, _ = resp["episode_id"].(string)
	}
	require.NotEmpty(t, episodeID, raw)
	node := "episode-" + strings.TrimPrefix(episodeID, "episode-")

	var nb map[string]any
	require.Eventually(t, func() bool {
		code, nb = jsonCall(t, d, "GET", "/entities/memory-design/neighbors?relations=used_skill", "", svc)
		return code == http.StatusOK && len(asList(nb["edges"])) > 0
	}, 20*time.Second, 20*time.Millisecond, "the graph follows the ingested episode")
	e := asList(nb["edges"])[0].(map[string]any)
	require.Equal(t, node, e["fromEntityId"])
	code, skill := jsonCall(t, d, "GET", "/entities/memory-design", "", svc)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "skill", skill["entity"].(map[string]any)["type"])
	code, out := jsonCall(t, d, "GET", "/entities/"+node+"/neighbors?relations=resulted_in&relations=touched_artifact", "", svc)
	require.Equal(t, http.StatusOK, code, out)
	var ids []string
	for _, x := range asList(out["entities"]) {
		ids = append(ids, x.(map[string]any)["entity_id"].(string))
	}
	require.Equal(t, []string{"ai-skills-skills-graph-concept-md", "outcome-success"}, ids)
}
