package episodefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The episode of ai-skills-memory-protocol §12, verbatim.
const specExample = `{
  "timestamp": "2025-12-30T13:00:00+02:00",
  "task_text": "Design local DB-first AI Skills memory protocol",
  "summary": "Updated protocol to SQLite graph + Chroma vectors + Ollama embeddings",
  "used_skills": ["docs", "memory-design"],
  "touched_artifacts": ["ai_skills/skills_graph_concept.md"],
  "outcome": {"status": "success", "notes": "Spec updated"},
  "errors": [],
  "tests": []
}`

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestTheSpecExampleIsAnEpisodeAsWritten(t *testing.T) {
	items, err := Read(write(t, t.TempDir(), "ep.json", specExample), nil)
	require.NoError(t, err)
	require.Len(t, items, 1)
	e := items[0].Request.GetEpisode()
	require.Equal(t, "Design local DB-first AI Skills memory protocol", e.GetTaskText())
	require.Equal(t, []string{"docs", "memory-design"}, e.GetUsedSkills())
	require.Equal(t, "success", e.GetOutcome().GetStatus())
	require.Equal(t, "2025-12-30T11:00:00Z", e.GetTimestamp().AsTime().Format("2006-01-02T15:04:05Z07:00"))
	require.Equal(t, "ep.json", filepath.Base(items[0].Source))
}

func TestFormats(t *testing.T) {
	dir := t.TempDir()
	one := `{"task_text": "a", "summary": "s"}`
	wrapped := `{"agent_id": "other-agent", "episode": {"task_text": "b"}, "auto_approve": true}`
	cases := map[string]struct {
		path   string
		n      int
		agents []string
	}{
		"jsonl":        {write(t, dir, "a.jsonl", one+"\n\n# a comment\n"+wrapped+"\n"), 2, []string{"", "other-agent"}},
		"json array":   {write(t, dir, "b.json", "["+one+","+wrapped+"]"), 2, []string{"", "other-agent"}},
		"yaml docs":    {write(t, dir, "c.yaml", "task_text: a\nused_skills: [x]\ntimestamp: 2026-01-05T09:12:00Z\n---\nagent_id: other-agent\nepisode:\n  task_text: b\n"), 2, []string{"", "other-agent"}},
		"yaml list":    {write(t, dir, "d.yml", "- task_text: a\n- task_text: b\n"), 2, []string{"", ""}},
		"no extension": {write(t, dir, "e", one+"\n"+one+"\n"), 2, []string{"", ""}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			items, err := Read(tc.path, nil)
			require.NoError(t, err)
			require.Len(t, items, tc.n)
			for i, it := range items {
				require.Equal(t, tc.agents[i], it.Request.GetAgentId())
				require.NotEmpty(t, it.Request.GetEpisode().GetTaskText())
			}
		})
	}
}

func TestFolderAndStdin(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "2.json", `{"task_text": "second"}`)
	write(t, dir, "1.yaml", "task_text: first\n")
	write(t, dir, "sub/3.jsonl", `{"task_text": "third"}`+"\n")
	write(t, dir, "README.md", "not an episode")
	items, err := Read(dir, nil)
	require.NoError(t, err)
	var tasks []string
	for _, it := range items {
		tasks = append(tasks, it.Request.GetEpisode().GetTaskText())
	}
	require.Equal(t, []string{"first", "second", "third"}, tasks)

	items, err = Read(Stdin, strings.NewReader(specExample))
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, "-", items[0].Source)
	items, err = Read(Stdin, strings.NewReader("task_text: from yaml\n"))
	require.NoError(t, err)
	require.Equal(t, "from yaml", items[0].Request.GetEpisode().GetTaskText())
}

func TestErrorsNameTheFileAndLine(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ content, want string }{
		"x.jsonl":  {`{"task_text": "ok"}` + "\n" + `{"task_text": "x", "sumary": "typo"}` + "\n", `x.jsonl:2: `},
		"y.jsonl":  {`{"task_text": "ok"}` + "\n" + `not json` + "\n", `y.jsonl:2: `},
		"z.json":   {`{"used_skills": "not a list"}`, `z.json: `},
		"w.yaml":   {"task_text: a\n---\ntask_txt: b\n", `w.yaml#2: `},
		"e.jsonl":  {"\n\n", `e.jsonl: no episodes`},
		"n.json":   {`{"agent_id": "a", "episode": null}`, `n.json: "episode" is empty`},
		"v.jsonl":  {`{"agent_id": "a", "episode": {"task_text": "x"}, "extra": 1}`, `v.jsonl:1: `},
		"arr.json": {`[{"task_text": "a"}, {"bogus": 1}]`, `arr.json[1]: `},
	} {
		_, err := Read(write(t, dir, name, tc.content), nil)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), tc.want, name)
	}
	_, err := Read(filepath.Join(dir, "missing.json"), nil)
	require.Error(t, err)
	_, err = Read(t.TempDir(), nil)
	require.ErrorContains(t, err, "no .json, .jsonl or .yaml episode files")
}
