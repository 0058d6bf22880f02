package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
)

// The conformance suite (issue #24): every JSON example of the specs is a
// fixture under testdata/conformance/ (one file per example, with its source
// file, section and lines, and the endpoint it maps to). Request examples are
// replayed as written, with only their placeholders filled; response
// examples are checked field by field against what the server answers: every
// field of the example must be there, under the spec's name, with the spec's
// type, time format and (for enum-like fields) value.

const conformanceDir = "../../testdata/conformance"

// specDir is where the specs live on a developer's machine; the fixtures'
// verbatim text is compared with them when the folder exists.
const specDir = "../../../shared/spec"

const confAgent = "garden-bloom-curator"

type confReplay struct {
	Fixture string `json:"fixture"`
	Method  string `json:"method"`
	Path    string `json:"path"`
	Body    string `json:"body"`
}

type confFixture struct {
	ID     string `json:"id"`
	Order  int    `json:"order"`
	Source struct {
		File    string `json:"file"`
		Section string `json:"section"`
		Lines   string `json:"lines"`
	} `json:"source"`
	// Kind is "request" (a body to replay), "response" (an answer to check),
	// "markdown" (a decisions.md block proposed as add_decision content) or
	// "path" (a tool whose parameters are path parameters).
	Kind         string              `json:"kind"`
	Endpoint     string              `json:"endpoint"`
	Verbatim     string              `json:"verbatim"`
	Placeholders [][2]string         `json:"placeholders"`
	Request      *confReplay         `json:"request"`
	Replay       *confReplay         `json:"replay"`
	Role         string              `json:"role"`
	At           string              `json:"at"`
	Exact        []string            `json:"exact"`
	Contains     map[string]string   `json:"contains"`
	OneOf        map[string][]string `json:"oneOf"`
	ExpectFields map[string]any      `json:"expectFields"`
	Expect       map[string]any      `json:"expect"`
	Eventually   bool                `json:"eventually"`
	Unsupported  string              `json:"unsupported"`
	Note         string              `json:"note"`
}

// filled is the example with its placeholders filled, in order.
func (f *confFixture) filled() string {
	s := f.Verbatim
	for _, p := range f.Placeholders {
		s = strings.ReplaceAll(s, p[0], p[1])
	}
	return s
}

func loadConformance(t *testing.T) []*confFixture {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(conformanceDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	var out []*confFixture
	for _, n := range names {
		raw, err := os.ReadFile(n)
		require.NoError(t, err)
		f := &confFixture{}
		require.NoError(t, json.Unmarshal(raw, f), n)
		require.Equal(t, strings.TrimSuffix(filepath.Base(n), ".json"), f.ID, n)
		require.NotEmpty(t, f.Source.File, n)
		require.NotEmpty(t, f.Source.Section, n)
		require.NotEmpty(t, f.Endpoint, n)
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// TestConformanceFixturesMatchSpecs checks that each fixture's verbatim text
// is the spec's text at the recorded lines, and counts fixtures per document.
func TestConformanceFixturesMatchSpecs(t *testing.T) {
	fixtures := loadConformance(t)
	per := map[string][2]int{}
	for _, f := range fixtures {
		c := per[f.Source.File]
		c[0]++
		if f.Unsupported != "" {
			c[1]++
		}
		per[f.Source.File] = c
		if f.Unsupported == "" && (f.Kind == "request" || f.Kind == "response") {
			var v any
			require.NoError(t, json.Unmarshal([]byte(f.filled()), &v), "%s: the filled example must be JSON", f.ID)
		}
	}
	for file, c := range per {
		t.Logf("%s: %d fixtures (%d not supported)", file, c[0], c[1])
	}
	if _, err := os.Stat(specDir); err != nil {
		t.Logf("specs not found at %s; verbatim check skipped", specDir)
		return
	}
	for _, f := range fixtures {
		raw, err := os.ReadFile(filepath.Join(specDir, f.Source.File))
		require.NoError(t, err)
		var a, b int
		_, err = fmt.Sscanf(f.Source.Lines, "%d-%d", &a, &b)
		require.NoError(t, err, f.ID)
		lines := strings.Split(string(raw), "\n")
		require.Equal(t, strings.Join(lines[a-1:b], "\n"), f.Verbatim, "%s: verbatim differs from %s lines %s", f.ID, f.Source.File, f.Source.Lines)
	}
}

// checkShape reports every way got differs from the spec's example want.
func checkShape(want, got any, path string, f *confFixture, errs *[]string) {
	fail := func(format string, a ...any) {
		*errs = append(*errs, fmt.Sprintf("%s: ", strings.TrimPrefix(path, "."))+fmt.Sprintf(format, a...))
	}
	key := strings.TrimPrefix(path, ".")
	for _, e := range f.Exact {
		if e == key {
			if fmt.Sprint(want) != fmt.Sprint(got) {
				fail("want %v (as the spec), got %v", want, got)
			}
		}
	}
	if s, ok := f.Contains[key]; ok && !strings.Contains(fmt.Sprint(got), s) {
		fail("want a value containing %q, got %v", s, got)
	}
	if set, ok := f.OneOf[key]; ok {
		found := false
		for _, s := range set {
			found = found || s == got
		}
		if !found {
			fail("want one of %v, got %v", set, got)
		}
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			fail("want an object, got %T %v", got, got)
			return
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				fail("field %q missing (have %v)", k, keys(g))
				continue
			}
			checkShape(wv, gv, path+"."+k, f, errs)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			fail("want an array, got %T %v", got, got)
			return
		}
		if len(w) > 0 {
			if len(g) == 0 {
				fail("want a non-empty array, got []")
			}
			for i, gv := range g {
				checkShape(w[0], gv, fmt.Sprintf("%s[%d]", path, i), f, errs)
			}
		}
	case string:
		g, ok := got.(string)
		if !ok {
			fail("want a string, got %T %v", got, got)
			return
		}
		if _, err := time.Parse(time.RFC3339, w); err == nil {
			if _, err := time.Parse(time.RFC3339Nano, g); err != nil {
				fail("want an RFC 3339 time, got %q", g)
			}
		}
	case float64:
		g, ok := got.(float64)
		if !ok {
			fail("want a number, got %T %v", got, got)
			return
		}
		if w == math.Trunc(w) && g != math.Trunc(g) {
			fail("want an integer, got %v", g)
		}
	case bool:
		if _, ok := got.(bool); !ok {
			fail("want a boolean, got %T %v", got, got)
		}
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestConformance replays the specs' examples against a real server.
func TestConformance(t *testing.T) {
	fixtures := loadConformance(t)
	d := startInProcess(t)
	tokens := map[string]string{
		"service":  token(t, d, auth.RoleService),
		"reviewer": token(t, d, auth.RoleReviewer),
		"admin":    token(t, d, auth.RoleAdmin),
	}
	svc, rev := tokens["service"], tokens["reviewer"]
	applyProposal := func(resp map[string]any) {
		t.Helper()
		id, _ := resp["proposalId"].(string)
		require.NotEmpty(t, id, resp)
		code, appr := jsonCall(t, d, "POST", "/proposals/"+id+":approve", `{}`, rev)
		require.Equal(t, http.StatusOK, code, appr)
		require.Eventually(t, func() bool {
			_, got := jsonCall(t, d, "GET", "/proposals/"+id, "", svc)
			return got["status"] == "applied"
		}, 20*time.Second, 10*time.Millisecond)
	}
	propose := func(body string) {
		t.Helper()
		code, resp := jsonCall(t, d, "POST", "/memory/"+confAgent+"/propose", body, svc)
		require.Equal(t, http.StatusOK, code, resp)
		applyProposal(resp)
	}

	// The agent the examples talk about: onboarded, with loop_001 open and
	// facts about MinIO (an entity), several commits deep.
	code, onboard := jsonCall(t, d, "POST", "/v1/memory/"+confAgent+"/onboard", `{}`, svc)
	require.Equal(t, http.StatusOK, code, onboard)
	applyProposal(onboard)
	propose(`{"runId":"run_abc123","updates":[{"file":"open_loops.md","operation":"open","content":"Підтвердити versioning у [[MinIO]]"},
	  {"file":"facts.md","operation":"append","section":"Технічні знання","content":"- [[MinIO]] зберігає знімки пам'яті"}]}`)
	propose(`{"runId":"run_abc124","updates":[{"file":"facts.md","operation":"append","section":"Технічні знання","content":"- Bucket mcpstorage живе у [[MinIO]]"}]}`)
	propose(`{"runId":"run_abc125","updates":[{"file":"facts.md","operation":"append","section":"Технічні знання","content":"- Снепшоти пишуться як tar.gz"}]}`)
	propose(`{"runId":"run_abc126","updates":[{"file":"facts.md","operation":"append","section":"Технічні знання","content":"- Versioning увімкнено для mcpstorage"}]}`)
	propose(`{"runId":"run_abc127","updates":[{"file":"facts.md","operation":"append","section":"Технічні знання","content":"- Gateway оновлює meta.json"}]}`)

	entityID := func() string {
		var id string
		require.Eventually(t, func() bool {
			_, got := jsonCall(t, d, "GET", "/entities?agentId="+confAgent, "", svc)
			es, _ := got["entities"].([]any)
			if len(es) == 0 {
				return false
			}
			id, _ = es[0].(map[string]any)["entity_id"].(string)
			return id != ""
		}, 20*time.Second, 50*time.Millisecond)
		return id
	}
	expand := func(p string) string {
		p = strings.ReplaceAll(p, "{agentId}", confAgent)
		if strings.Contains(p, "{entityId}") {
			p = strings.ReplaceAll(p, "{entityId}", entityID())
		}
		return p
	}

	type answer struct {
		code int
		body map[string]any
	}
	answers := map[string]answer{}
	byID := map[string]*confFixture{}
	for _, f := range fixtures {
		byID[f.ID] = f
	}
	send := func(f *confFixture, r *confReplay, body string) answer {
		tok := tokens["service"]
		if f.Role != "" {
			tok = tokens[f.Role]
		}
		code, m := jsonCall(t, d, r.Method, expand(r.Path), body, tok)
		return answer{code, m}
	}
	run := func(f *confFixture) answer {
		if a, ok := answers[f.ID]; ok {
			return a
		}
		a := send(f, f.Request, f.filled())
		answers[f.ID] = a
		return a
	}

	for _, f := range fixtures {
		t.Run(f.ID, func(t *testing.T) {
			if f.Unsupported != "" {
				t.Skip("not supported: " + f.Unsupported)
			}
			switch f.Kind {
			case "request":
				a := run(f)
				require.Equal(t, http.StatusOK, a.code, "%s as written must be accepted: %v", f.ID, a.body)
				for k, v := range f.ExpectFields {
					require.Equal(t, fmt.Sprint(v), fmt.Sprint(a.body[k]), "field %s", k)
				}
			case "markdown":
				body, err := json.Marshal(map[string]any{"runId": "run_abc123", "updates": []any{map[string]any{
					"file": "decisions.md", "operation": "add_decision", "content": f.filled()}}})
				require.NoError(t, err)
				code, resp := jsonCall(t, d, "POST", "/memory/"+confAgent+"/propose", string(body), svc)
				require.Equal(t, http.StatusOK, code, resp)
				u := resp["proposal"].(map[string]any)["updates"].([]any)[0].(map[string]any)
				dec, _ := u["decision"].(map[string]any)
				require.NotNil(t, dec, "the block is parsed into the structured decision: %v", u)
				for k, v := range f.Expect["decision"].(map[string]any) {
					require.Equal(t, v, dec[k], "decision.%s", k)
				}
				applyProposal(resp)
			case "path":
				var a answer
				require.Eventually(t, func() bool {
					a = send(f, f.Replay, "")
					return a.code == http.StatusOK
				}, 20*time.Second, 50*time.Millisecond, "%v", a.body)
			case "response":
				var want any
				require.NoError(t, json.Unmarshal([]byte(f.filled()), &want))
				check := func() []string {
					var a answer
					if f.Replay.Fixture != "" {
						src := byID[f.Replay.Fixture]
						if f.Eventually {
							delete(answers, src.ID)
						}
						a = run(src)
					} else {
						a = send(f, f.Replay, f.Replay.Body)
					}
					if a.code != http.StatusOK {
						return []string{fmt.Sprintf("status %d: %v", a.code, a.body)}
					}
					var got any = a.body
					if f.At != "" {
						got = a.body[f.At]
					}
					var errs []string
					checkShape(want, got, "", f, &errs)
					return errs
				}
				errs := check()
				for deadline := time.Now().Add(20 * time.Second); f.Eventually && len(errs) > 0 && time.Now().Before(deadline); {
					time.Sleep(100 * time.Millisecond)
					errs = check()
				}
				require.Empty(t, errs, "%s (%s, %s)", f.ID, f.Source.File, f.Source.Section)
			default:
				t.Fatalf("unknown kind %q", f.Kind)
			}
		})
	}

	t.Run("every field", func(t *testing.T) { testEveryField(t, d, tokens) })
	t.Run("spec extras", func(t *testing.T) { testSpecExtras(t, d, tokens) })
}

// testEveryField checks issue #24 point 2: zero values and empty lists are
// written, not dropped.
func testEveryField(t *testing.T, d *deployment, tokens map[string]string) {
	svc := tokens["service"]
	code, resp := jsonCall(t, d, "POST", "/v1/memory/"+confAgent+"/search", `{"query":"zzzznothingmatches"}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, "results", "an empty result list is written as []")
	require.Equal(t, []any{}, resp["results"])
	require.Contains(t, resp, "totalHits")

	code, resp = jsonCall(t, d, "POST", "/memory/"+confAgent+"/propose", `{"runId":"run_every","updates":[{"file":"facts.md","operation":"append","section":"Інше","content":"- every field"}]}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	p := resp["proposal"].(map[string]any)
	require.Equal(t, false, p["autoApproved"], "autoApproved is written when false")
	require.Contains(t, p, "attempts")
	require.Equal(t, "після підтвердження людиною", resp["estimatedApplyAt"])
	require.Contains(t, resp, "currentVersion")
	require.Contains(t, resp, "resolution")
}

// testSpecExtras checks how the spec-only request fields are validated.
func testSpecExtras(t *testing.T, d *deployment, tokens map[string]string) {
	svc, admin := tokens["service"], tokens["admin"]
	bad := func(method, path, body, tok, field string) {
		t.Helper()
		code, _, raw := call(t, d, method, path, body, tok)
		require.Equal(t, http.StatusBadRequest, code, raw)
		require.Contains(t, raw, field, raw)
	}
	bad("POST", "/v1/memory/"+confAgent+"/context", `{"tool":"memory-diff"}`, svc, "tool")
	bad("POST", "/memory/"+confAgent+"/propose", `{"tool":"read-memory","updates":[{"file":"facts.md","operation":"append","section":"X","content":"- x"}]}`, svc, "tool")
	bad("POST", "/memory/"+confAgent+"/propose", `{"type":"policy-update","updates":[{"file":"facts.md","operation":"append","section":"X","content":"- x"}]}`, svc, "type")
	bad("POST", "/v1/memory/"+confAgent+"/diff", `{"tool":"memory-snapshot"}`, svc, "tool")
	bad("POST", "/memory/"+confAgent+"/snapshot", `{"targetStorage":"gcs"}`, admin, "targetStorage")
	bad("POST", "/memory/"+confAgent+"/snapshot", `{"path":"elsewhere/x.tar.gz"}`, admin, "path")
	bad("POST", "/memory/"+confAgent+"/snapshot", `{"path":"memory-snapshots/other-agent/x.tar.gz"}`, admin, "path")
	bad("POST", "/v1/memory/"+confAgent+"/context", `{"maxTokens":100,"options":{"maxTokens":200}}`, svc, "maxTokens")
	bad("POST", "/v1/memory/"+confAgent+"/search", `{"query":"x","top_k":3,"k":4}`, svc, "k")
	bad("POST", "/v1/memory/"+confAgent+"/search", `{"query":"x","filters":{"agent_id":"other-agent"}}`, svc, "agent_id")
	bad("POST", "/memory/"+confAgent+"/propose", `{"updates":[{"file":"decisions.md","operation":"add_decision","content":"no heading here"}]}`, svc, "decision")

	// options are honoured: includeFiles limits the read.
	code, resp := jsonCall(t, d, "POST", "/v1/memory/"+confAgent+"/context", `{"options":{"includeFiles":["open_loops.md"]}}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, []string{"open_loops.md"}, keys(resp["content"].(map[string]any)))
	code, resp = jsonCall(t, d, "POST", "/v1/memory/"+confAgent+"/context", `{"mode":"wide","options":{"excludeFiles":["facts.md"]}}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	require.NotContains(t, resp["content"], "facts.md")
}
