package memread

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// words counts whitespace-separated words: a stand-in tokenizer that makes
// budgets easy to reason about in tests.
func words(s string) int { return len(strings.Fields(s)) }

func source(files map[string]string) Source {
	return Source{
		Read: func(rel string) (string, bool, error) { s, ok := files[rel]; return s, ok, nil },
		List: func(dir string) ([]string, error) {
			var out []string
			for k := range files {
				if strings.HasPrefix(k, dir) {
					out = append(out, k)
				}
			}
			return out, nil
		},
		Count: words,
	}
}

var agentFiles = map[string]string{
	"snapshot.md":   "# Snapshot: a\n\n## Role\ncurator of things\n",
	"open_loops.md": "# Open Loops: a\n\n## Open\n- [ ] loop_001: check backups\n",
	"facts.md":      "# Facts: a\n\n## Domain\n- fact one\n\n## Tech\n- fact two\n",
	"decisions.md": "# Decisions: a\n\n" + func() string {
		var b strings.Builder
		for i := 1; i <= 7; i++ {
			fmt.Fprintf(&b, "## 2026-02-%02d — Decision %d\n**Status:** accepted\n\n", i, i)
		}
		return b.String()
	}(),
	"changelog.md":           "# Changelog: a\n\n## 2026-02-17\n- entry\n",
	"timeline/2026-02-01.md": "# Timeline old\n",
	"timeline/2026-02-16.md": "# Timeline 16\n",
	"timeline/2026-02-17.md": "# Timeline 17\n",
	"runs/run_1.md":          "# Run 1\n",
}

func rels(r *Result) []string {
	var out []string
	for _, f := range r.Files {
		out = append(out, f.Rel)
	}
	return out
}

func TestModes(t *testing.T) {
	src := source(agentFiles)
	basic, err := Read(src, Request{Mode: Basic})
	require.NoError(t, err)
	require.Equal(t, []string{"snapshot.md", "open_loops.md"}, rels(basic))
	require.False(t, basic.Truncated)

	wide, err := Read(src, Request{Mode: Wide})
	require.NoError(t, err)
	require.Equal(t, []string{"snapshot.md", "open_loops.md", "facts.md", "decisions.md"}, rels(wide))
	dec := wide.Files[3].Content
	require.Contains(t, dec, "Decision 7")
	require.Contains(t, dec, "Decision 3")
	require.NotContains(t, dec, "Decision 2", "only the last five decisions")
	require.Less(t, strings.Index(dec, "Decision 7"), strings.Index(dec, "Decision 6"), "newest first")

	deep, err := Read(src, Request{Mode: Deep, Today: "2026-02-17"})
	require.NoError(t, err)
	require.Equal(t, []string{"snapshot.md", "open_loops.md", "facts.md", "decisions.md", "changelog.md",
		"timeline/2026-02-01.md", "timeline/2026-02-16.md", "timeline/2026-02-17.md"}, rels(deep))
	require.NotContains(t, rels(deep), "runs/run_1.md")
	require.Contains(t, deep.Files[3].Content, "Decision 1", "deep loads every decision")
}

func TestBasicAndWideNeverLoadLayer2(t *testing.T) {
	src := source(agentFiles)
	for _, m := range []Mode{Basic, Wide} {
		r, err := Read(src, Request{Mode: m, Include: []string{"snapshot.md", "runs/run_1.md", "changelog.md", "timeline/2026-02-17.md"}})
		require.NoError(t, err)
		require.Equal(t, []string{"snapshot.md"}, rels(r), m)
	}
}

func TestBudgetCutsAtSectionsAndNeverOverflows(t *testing.T) {
	src := source(agentFiles)
	full, err := Read(src, Request{Mode: Wide})
	require.NoError(t, err)
	for budget := 1; budget <= full.Tokens+2; budget++ {
		r, err := Read(src, Request{Mode: Wide, MaxTokens: budget, Reserved: 1})
		if err != nil {
			var small *BudgetTooSmallError
			require.ErrorAs(t, err, &small)
			require.Greater(t, small.Min, budget)
			continue
		}
		require.LessOrEqual(t, r.Tokens, budget, "budget %d", budget)
		sum := 1
		for _, f := range r.Files {
			sum += words(Header(f.Rel)) + f.Tokens
			if f.Truncated {
				require.True(t, r.Truncated)
			}
			if f.Truncated {
				require.True(t, strings.HasPrefix(agentFiles[f.Rel], f.Content) || f.Rel == "decisions.md", "budget %d: %s is cut, not changed", budget, f.Rel)
				require.True(t, strings.HasSuffix(f.Content, "\n"), "budget %d: %s is cut at a line boundary", budget, f.Rel)
			}
		}
		for _, w := range r.Warnings {
			sum += words(w)
		}
		require.Equal(t, sum, r.Tokens, "budget %d: headers and warnings count", budget)
		if budget < full.Tokens+1 {
			require.True(t, r.Truncated, "budget %d", budget)
			require.NotEmpty(t, r.Warnings)
		}
	}
	require.Equal(t, "# Facts: a\n\n## Domain\n- fact one\n\n", fitSections(agentFiles["facts.md"], 8, words), "a cut keeps whole sections when one fits")
}

func TestIncludeExcludeAndDeterminism(t *testing.T) {
	src := source(agentFiles)
	r, err := Read(src, Request{Mode: Deep, Exclude: []string{"timeline/", "changelog.md"}})
	require.NoError(t, err)
	require.Equal(t, []string{"snapshot.md", "open_loops.md", "facts.md", "decisions.md"}, rels(r))
	r2, err := Read(src, Request{Mode: Deep, Exclude: []string{"timeline/", "changelog.md"}})
	require.NoError(t, err)
	require.Equal(t, r, r2)
	_, err = Read(src, Request{Mode: "everything"})
	require.Error(t, err)
}

func TestAlwaysLoadBlocksJoinBasicAndWide(t *testing.T) {
	files := map[string]string{}
	for k, v := range agentFiles {
		files[k] = v
	}
	files["decisions.md"] += "<!-- ALWAYS_LOAD -->\nNever deploy on Fridays.\n<!-- /ALWAYS_LOAD -->\n"
	files["runs/run_1.md"] = "# Run 1\n\n<!-- ALWAYS_LOAD -->\nThe staging key rotates monthly.\n<!-- /ALWAYS_LOAD -->\nnoise\n<!-- ALWAYS_LOAD -->\nopen to the end"
	files["facts.md"] += "<!-- ALWAYS_LOAD -->\n- pinned fact\n<!-- /ALWAYS_LOAD -->\n"
	require.Equal(t, []string{"The staging key rotates monthly.\n", "open to the end\n"}, AlwaysLoadBlocks(files["runs/run_1.md"]))
	src := source(files)
	blocks, err := CollectAlwaysLoad(src)
	require.NoError(t, err)
	require.Equal(t, []Block{{Rel: "facts.md", Content: "- pinned fact\n"}}, blocks, "Layer 2 blocks are never collected")

	basic, err := Read(src, Request{Mode: Basic, AlwaysLoad: blocks})
	require.NoError(t, err)
	require.Equal(t, []string{"snapshot.md", "always_load/facts.md", "open_loops.md"}, rels(basic))

	// Layer 2 blocks handed in anyway are not loaded (spec DiffMem §11.4).
	withL2 := append([]Block{{Rel: "decisions.md", Content: "Never deploy on Fridays.\n"}, {Rel: "runs/run_1.md", Content: "x\n"}}, blocks...)
	basic, err = Read(src, Request{Mode: Basic, AlwaysLoad: withL2})
	require.NoError(t, err)
	require.Equal(t, []string{"snapshot.md", "always_load/facts.md", "open_loops.md"}, rels(basic))

	// Wide loads facts.md whole, so its block is not loaded twice.
	wide, err := Read(src, Request{Mode: Wide, AlwaysLoad: withL2, Include: []string{"facts.md"}, Exclude: []string{"runs/"}})
	require.NoError(t, err)
	require.Equal(t, []string{"facts.md"}, rels(wide))

	deep, err := Read(src, Request{Mode: Deep, AlwaysLoad: withL2})
	require.NoError(t, err)
	for _, f := range deep.Files {
		require.False(t, strings.HasPrefix(f.Rel, AlwaysLoadPrefix), "deep loads the files themselves")
	}
}
