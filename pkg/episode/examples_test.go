package episode_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/dupfacts"
	"github.com/garden-bloom/memory/pkg/episode"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/tokens"
)

var (
	examplesFile = filepath.Join("..", "..", "examples", "episodes.jsonl")
	schemaFile   = filepath.Join("..", "..", "docs", "episode.schema.json")
)

// exampleLines are the lines of examples/episodes.jsonl.
func exampleLines(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(examplesFile)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			out = append(out, sc.Text())
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// The issue asks for at least 50 varied episodes, the task for 60: every one
// valid, and varied enough that an onboarding export has something to say
// (recurring failure modes with fixes, many skills, context hierarchies).
func TestExamplesAreValidAndVaried(t *testing.T) {
	lines := exampleLines(t)
	require.GreaterOrEqual(t, len(lines), 60)
	counter, err := tokens.New("")
	require.NoError(t, err)

	statuses := map[string]int{}
	skills := map[string]bool{}
	contexts := map[string]bool{}
	modes := map[string]int{}
	fixed := map[string]bool{}
	facts := map[string]int{}
	ids := map[string]int{}
	var decisions, withTests, withEnv int
	first, last := "9999", "0000"
	for i, l := range lines {
		e, err := episode.Decode([]byte(l))
		require.NoError(t, err, "line %d", i+1)
		require.NoError(t, episode.Normalize(e, now), "line %d", i+1)
		run := episode.Render(e)
		require.LessOrEqual(t, counter.Count(run), memlayout.RunLimit, "line %d", i+1)
		require.NotContains(t, ids, e.GetEpisodeId(), "line %d repeats the episode of line %d", i+1, ids[e.GetEpisodeId()])
		ids[e.GetEpisodeId()] = i + 1
		require.NotEmpty(t, e.GetTimestamp(), "examples carry their time")
		ts := e.GetTimestamp().AsTime().Format("2006-01-02")
		first, last = min(first, ts), max(last, ts)

		statuses[e.GetOutcome().GetStatus()]++
		for _, s := range e.GetUsedSkills() {
			skills[s] = true
		}
		contexts[e.GetContext()] = true
		if fm := episode.FailureMode(e); fm != "" {
			modes[fm]++
			if e.GetFix() != "" {
				fixed[fm] = true
			}
		}
		for _, f := range e.GetFacts() {
			n := dupfacts.Normalize(f)
			require.NotContains(t, facts, n, "line %d repeats a fact of line %d: the semantic guard would flag it", i+1, facts[n])
			facts[n] = i + 1
		}
		decisions += len(e.GetDecisions())
		if len(e.GetTests()) > 0 {
			withTests++
		}
		if e.GetEnvironment() != nil {
			withEnv++
		}
	}
	for _, s := range episode.Statuses {
		require.GreaterOrEqual(t, statuses[s], 5, "at least 5 episodes end in %s: %v", s, statuses)
	}
	require.GreaterOrEqual(t, len(skills), 12, "skills: %v", skills)
	recurring := 0
	for fm, n := range modes {
		if n >= 2 && fixed[fm] {
			recurring++
		}
	}
	require.GreaterOrEqual(t, recurring, 4, "failure modes that recur with a fix: %v", modes)
	deep := 0
	for c := range contexts {
		if strings.Count(c, "/") >= 2 {
			deep++
		}
	}
	require.GreaterOrEqual(t, deep, 5, "three-level contexts: %v", contexts)
	require.GreaterOrEqual(t, len(facts), 15)
	require.GreaterOrEqual(t, decisions, 3)
	require.GreaterOrEqual(t, withTests, 20)
	require.Equal(t, len(lines), withEnv)
	require.Less(t, first, "2026-01-10")
	require.Greater(t, last, "2026-02-10", "spread over weeks")
}

// schema is docs/episode.schema.json, parsed.
func schema(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(schemaFile)
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal(raw, &s))
	return s
}

// Every field of the Episode message, nested ones included, is in the JSON
// Schema under its JSON (snake_case) name, so the schema cannot fall behind
// the proto.
func TestSchemaHasEveryProtoField(t *testing.T) {
	var walk func(md protoreflect.MessageDescriptor, props map[string]any, path string)
	walk = func(md protoreflect.MessageDescriptor, props map[string]any, path string) {
		fields := md.Fields()
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			name := fd.JSONName()
			if md.FullName() == "gardenbloom.memory.v1.Decision" {
				name = string(fd.Name()) // the schema documents the proto names; lowerCamel is listed beside
			}
			p, ok := props[name].(map[string]any)
			require.True(t, ok, "docs/episode.schema.json has no %s%s", path, name)
			require.NotEmpty(t, p["type"], "%s%s has a type", path, name)
			if m := fd.Message(); m != nil && !strings.HasPrefix(string(m.FullName()), "google.protobuf.") {
				sub := p
				if items, ok := p["items"].(map[string]any); ok {
					sub = items
				}
				nested, ok := sub["properties"].(map[string]any)
				require.True(t, ok, "%s%s lists its properties", path, name)
				require.Equal(t, false, sub["additionalProperties"], "%s%s refuses unknown fields, as the API does", path, name)
				walk(m, nested, path+name+".")
			}
		}
	}
	s := schema(t)
	require.Equal(t, false, s["additionalProperties"])
	walk((&memoryv1.Episode{}).ProtoReflect().Descriptor(), s["properties"].(map[string]any), "")

	// The limits the schema states are the ones Normalize enforces.
	props := s["properties"].(map[string]any)
	for name, limit := range map[string]int{"task_text": episode.MaxTaskTextBytes, "summary": episode.MaxSummaryBytes,
		"failure_mode": episode.MaxFailureModeBytes, "fix": episode.MaxFixBytes, "context": episode.MaxContextBytes} {
		require.EqualValues(t, limit, props[name].(map[string]any)["maxLength"], name)
	}
	for name, limit := range map[string]int{"used_skills": episode.MaxSkills, "touched_artifacts": episode.MaxArtifacts,
		"errors": episode.MaxErrors, "tests": episode.MaxTests, "facts": episode.MaxFacts, "decisions": episode.MaxDecisions,
		"entity_refs": episode.MaxEntityRefs} {
		require.EqualValues(t, limit, props[name].(map[string]any)["maxItems"], name)
	}
}

// The spec's §12 example and every example episode validate against the
// schema, and so do the schema's own refusals match the API's.
func TestSchemaAcceptsTheExamples(t *testing.T) {
	raw, err := os.ReadFile(schemaFile)
	require.NoError(t, err)
	var s jsonschema.Schema
	require.NoError(t, json.Unmarshal(raw, &s))
	resolved, err := s.Resolve(nil)
	require.NoError(t, err)
	check := func(doc string) error {
		var v any
		require.NoError(t, json.Unmarshal([]byte(doc), &v))
		return resolved.Validate(v)
	}
	require.NoError(t, check(spec12))
	for i, l := range exampleLines(t) {
		require.NoError(t, check(l), "line %d", i+1)
	}
	for _, bad := range []string{
		`{"used_skills": ["go"]}`,
		`{"summary": "x", "outcome": {"status": "done"}}`,
		`{"summary": "x", "tests": [{"name": "t", "result": "ok"}]}`,
		`{"summary": "x", "sumary": "typo"}`,
		`{"summary": "x", "episode_id": "Not A Slug"}`,
		`{"summary": "x", "duration": "2m"}`,
	} {
		require.Error(t, check(bad), bad)
	}
}
