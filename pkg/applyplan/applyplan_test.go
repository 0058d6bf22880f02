package applyplan

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/tokens"
)

func files(m map[string]string) Reader {
	return func(rel string) (string, bool, error) {
		s, ok := m[rel]
		return s, ok, nil
	}
}

func counter(t *testing.T) *tokens.Counter {
	c, err := tokens.New("")
	require.NoError(t, err)
	return c
}

var now = time.Date(2026, 2, 17, 14, 30, 0, 0, time.UTC)

func TestBuildWritesMetaChangelogTimelineAndMessage(t *testing.T) {
	p := &memoryv1.Proposal{ProposalId: "proposal_1", AgentId: "cur", RunId: "run_7", Reasoning: "why\nmore",
		AutoApproved: true, EntityRefs: []string{"minio"},
		Updates: []*memoryv1.FileUpdate{
			{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: cur\n\nnow"},
			{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Domain", Content: "- a\n- b"},
		}}
	old := memlayout.Meta{AgentID: "cur", Version: 41}
	plan, err := Build(Input{Proposal: p, Read: files(map[string]string{"meta.json": string(old.Encode())}), Now: now, Counter: counter(t)})
	require.NoError(t, err)

	require.Equal(t, int32(42), plan.Meta.Version)
	require.Equal(t, "run_7", plan.Meta.LastRunID)
	require.Equal(t, []string{"facts.md", "snapshot.md"}, plan.Files)
	require.ElementsMatch(t, []string{"a", "b"}, plan.AddedFacts)
	require.ElementsMatch(t, []string{"snapshot.md", "facts.md", "meta.json", "changelog.md", "timeline/2026-02-17.md"}, keys(plan.Changes))
	require.Equal(t, "# Snapshot: cur\n\nnow\n", plan.Changes["snapshot.md"])
	require.Contains(t, plan.Changes["changelog.md"], "run_7")
	require.Contains(t, plan.Changes["changelog.md"], "**facts.md:** 2 fact(s) added")
	require.Contains(t, plan.Changes["timeline/2026-02-17.md"], "proposal_1")
	require.True(t, strings.HasPrefix(plan.Message, "memory-update: cur / run_7 / proposal_1\n\nFiles: facts.md, snapshot.md\nReason: why more\nAuto-approved: true\n"))
	require.Contains(t, plan.Message, "Entity-Refs: minio")
	meta, err := memlayout.ParseMeta([]byte(plan.Changes["meta.json"]))
	require.NoError(t, err)
	require.Equal(t, plan.Meta, meta)
}

func TestBuildIsDeterministic(t *testing.T) {
	p := &memoryv1.Proposal{ProposalId: "proposal_1", AgentId: "cur", RunId: "run_7",
		Updates: []*memoryv1.FileUpdate{{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "D", Content: "- a"}}}
	in := Input{Proposal: p, Read: files(map[string]string{}), Now: now, Counter: counter(t)}
	a, err := Build(in)
	require.NoError(t, err)
	b, err := Build(in)
	require.NoError(t, err)
	require.Equal(t, a, b)
}

func TestBuildRejectsWhatCannotApply(t *testing.T) {
	for name, u := range map[string]*memoryv1.FileUpdate{
		"remove missing fact": {File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- nope"},
		"close missing loop":  {File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE, LoopId: "loop_009"},
	} {
		_, err := Build(Input{Proposal: &memoryv1.Proposal{AgentId: "a", RunId: "r", Updates: []*memoryv1.FileUpdate{u}},
			Read: files(map[string]string{}), Now: now, Counter: counter(t)})
		require.ErrorIs(t, err, ErrInvalid, name)
	}
}

func TestConflicts(t *testing.T) {
	base := map[string]string{
		"facts.md":      "# Facts: a\n\n## Domain\n- one\n\n## Other\n- x\n",
		"snapshot.md":   "# S\n",
		"open_loops.md": "# Open Loops: a\n\n## Open\n- [ ] loop_001: t — opened 2026-02-01 | priority: normal\n",
	}
	grown := map[string]string{
		"facts.md":      "# Facts: a\n\n## Domain\n- one\n- two\n\n## Other\n- y\n",
		"snapshot.md":   "# S\n",
		"open_loops.md": base["open_loops.md"],
	}
	appendDomain := &memoryv1.FileUpdate{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Domain", Content: "- three"}
	appendOther := &memoryv1.FileUpdate{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Other", Content: "- z"}
	replace := &memoryv1.FileUpdate{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# S2"}
	closeLoop := &memoryv1.FileUpdate{File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE, LoopId: "loop_001"}

	got, err := Conflicts([]*memoryv1.FileUpdate{appendDomain, replace, closeLoop}, files(base), files(grown))
	require.NoError(t, err)
	require.Empty(t, got, "a section that only grew, an unchanged file and loop: no conflict")

	got, err = Conflicts([]*memoryv1.FileUpdate{appendOther}, files(base), files(grown))
	require.NoError(t, err)
	require.Len(t, got, 1, "a reworded fact in the section is a conflict")

	evicted := map[string]string{
		"facts.md":     "# Facts: a\n\n## Domain\n- two\n\n## Other\n- x\n",
		"decisions.md": "# Decisions: a\n\n## Evicted facts\n- one — evicted 2026-03-01 (stale-fact)\n",
	}
	got, err = Conflicts([]*memoryv1.FileUpdate{appendDomain}, files(base), files(evicted))
	require.NoError(t, err)
	require.Empty(t, got, "facts evicted to Layer 2 meanwhile are not an edit")

	changed := map[string]string{"snapshot.md": "# S by a person\n", "open_loops.md": strings.Replace(base["open_loops.md"], "- [ ]", "- [x]", 1), "facts.md": base["facts.md"]}
	got, err = Conflicts([]*memoryv1.FileUpdate{replace, closeLoop}, files(base), files(changed))
	require.NoError(t, err)
	require.Len(t, got, 2)
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A check (Propose's dry run) decides exactly what the full plan decides —
// the same refusals, warnings, evictions and Layer 1 files — without reading
// what only the commit's bookkeeping needs: decisions.md (which grows all an
// agent's life and was read, parsed and rewritten at every dry run), the
// changelog and the day's timeline.
func TestCheckDecidesAsTheFullPlanWithoutTheBookkeeping(t *testing.T) {
	var facts strings.Builder
	facts.WriteString("# Facts: a\n\n## Domain\n")
	for i := range 700 {
		facts.WriteString("- an older fact about the gateway, number " + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "\n")
	}
	layer1 := map[string]string{
		"meta.json":     string(memlayout.Meta{AgentID: "a", Version: 3}.Encode()),
		"facts.md":      facts.String(),
		"open_loops.md": "# Open Loops: a\n\n## Open\n- [ ] loop_001: t — opened 2026-02-01 | priority: normal\n",
		"snapshot.md":   "# Snapshot: a\n",
	}
	all := map[string]string{"decisions.md": "# Decisions: a\n\n## Evicted facts\n- old\n", "changelog.md": "# Changelog: a\n",
		"timeline/2026-02-17.md": "# Timeline: a\n"}
	for k, v := range layer1 {
		all[k] = v
	}
	bookkeeping := func(rel string) (string, bool, error) {
		if _, ok := layer1[rel]; !ok && rel != "runs/run_7.md" {
			t.Errorf("a check read %s", rel)
		}
		return files(all)(rel)
	}
	for name, u := range map[string]*memoryv1.FileUpdate{
		"append evicting": {File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Domain", Content: "- a new fact"},
		"remove missing":  {File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- nope"},
		"close missing":   {File: "open_loops.md", Operation: memoryv1.Operation_OPERATION_CLOSE, LoopId: "loop_009"},
		"too big":         {File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: strings.Repeat("word ", 3000)},
		"layer 2 block":   {File: "runs/run_7.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "<!-- ALWAYS_LOAD -->\nx\n<!-- /ALWAYS_LOAD -->"},
	} {
		t.Run(name, func(t *testing.T) {
			p := &memoryv1.Proposal{ProposalId: "proposal_1", AgentId: "a", RunId: "run_7", Updates: []*memoryv1.FileUpdate{u}}
			full, fullErr := Build(Input{Proposal: p, Read: files(all), Now: now, Counter: counter(t)})
			check, checkErr := Build(Input{Proposal: p, Read: bookkeeping, Now: now, Counter: counter(t), CheckOnly: true})
			if fullErr != nil {
				require.Equal(t, fullErr, checkErr)
				return
			}
			require.NoError(t, checkErr)
			switch name {
			case "append evicting":
				require.NotEmpty(t, full.EvictedFacts, "the case evicts")
			case "layer 2 block":
				require.NotEmpty(t, full.Warnings, "the case warns")
			}
			require.Equal(t, full.Warnings, check.Warnings)
			require.Equal(t, full.EvictedFacts, check.EvictedFacts)
			require.Equal(t, full.AddedFacts, check.AddedFacts)
			for _, rel := range []string{"snapshot.md", "facts.md", "open_loops.md"} {
				require.Equal(t, full.Changes[rel], check.Changes[rel], rel)
			}
		})
	}
}
