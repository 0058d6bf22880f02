package benchharness

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/tokens"
)

func gitOut(t *testing.T, repo string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"--git-dir", repo}, args...)...).CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

// gitOutIn is gitOut with stdin.
func gitOutIn(t *testing.T, repo, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"--git-dir", repo}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

func TestGenerateDeterministicAndWithinLimits(t *testing.T) {
	ctx := context.Background()
	cfg := GenConfig{Agents: 5, Commits: 120, Seed: 3}
	a, b := t.TempDir(), t.TempDir()
	ma, err := Generate(ctx, cfg, filepath.Join(a, "ds"), t.Logf)
	require.NoError(t, err)
	mb, err := Generate(ctx, cfg, filepath.Join(b, "ds"), t.Logf)
	require.NoError(t, err)
	require.Equal(t, ma.Head, mb.Head, "same seed, same head commit")
	require.Equal(t, 1+cfg.Agents+cfg.Commits, ma.TotalCommits)
	other, err := Generate(ctx, GenConfig{Agents: 5, Commits: 120, Seed: 4}, filepath.Join(b, "other"), t.Logf)
	require.NoError(t, err)
	require.NotEqual(t, ma.Head, other.Head)

	repo := filepath.Join(a, "ds", repoDir)
	gitOut(t, repo, "fsck", "--strict", "--no-dangling")
	require.Equal(t, strconv.Itoa(ma.TotalCommits), strings.TrimSpace(gitOut(t, repo, "rev-list", "--count", "main")))
	require.Equal(t, ma.Head, strings.TrimSpace(gitOut(t, repo, "rev-parse", "main")))

	// The product opens it and reads it like any repository.
	r, err := memrepo.Open(repo)
	require.NoError(t, err)
	head, err := r.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, ma.Head, head.String())

	// Each path's newest version is packed whole, its older ones as deltas.
	headFacts := strings.TrimSpace(gitOut(t, repo, "rev-parse", "main:"+memlayout.AgentDir(AgentID(0))+memlayout.FactsFile))
	require.Equal(t, strings.Repeat("0", 40), strings.TrimSpace(gitOutIn(t, repo, headFacts+"\n", "cat-file", "--batch-check=%(deltabase)")))
	firstFacts := strings.TrimSpace(gitOut(t, repo, "rev-list", "--reverse", "main", "--", memlayout.AgentDir(AgentID(0))+memlayout.FactsFile))
	firstFacts = strings.TrimSpace(gitOut(t, repo, "rev-parse", strings.Split(firstFacts, "\n")[0]+":"+memlayout.AgentDir(AgentID(0))+memlayout.FactsFile))
	require.NotEqual(t, strings.Repeat("0", 40), strings.TrimSpace(gitOutIn(t, repo, firstFacts+"\n", "cat-file", "--batch-check=%(deltabase)")))

	// Sources carry the store's ETag sidecars, as if put through it.
	sidecars, err := filepath.Glob(filepath.Join(a, "ds", objectsDir, "meta", "agents", "*", "sources", "*"))
	require.NoError(t, err)
	require.Len(t, sidecars, cfg.Agents*sourcesEach)

	counter, err := tokens.New(tokens.DefaultEncoding)
	require.NoError(t, err)
	for i := range cfg.Agents {
		id := AgentID(i)
		read := func(rel string) string {
			data, err := r.ReadFile(ctx, head, memlayout.AgentDir(id)+rel)
			require.NoError(t, err, rel)
			return string(data)
		}
		snap, facts, loops := read(memlayout.SnapshotFile), read(memlayout.FactsFile), read(memlayout.OpenLoopsFile)
		for _, f := range []struct {
			name      string
			content   string
			low, high int
		}{
			{"snapshot", snap, 1500, memlayout.SnapshotLimit},
			{"facts", facts, 6300, memlayout.FactsLimit},
			{"open loops", loops, 1200, memlayout.OpenLoopsLimit},
		} {
			n := counter.Count(f.content)
			require.LessOrEqual(t, n, f.high, "%s %s over its limit", id, f.name)
			require.GreaterOrEqual(t, n, f.low, "%s %s should be near its limit", id, f.name)
		}
		require.NoError(t, mdops.CheckSnapshot(snap))
		parsed := mdops.ParseFacts(facts)
		require.Equal(t, strings.Count(facts, "\n- "), len(parsed))
		require.Contains(t, facts, "[[", "facts link shared entities")
		open := 0
		for _, l := range mdops.ParseLoops(loops) {
			require.NotEmpty(t, l.ID, l.Text)
			if !l.Closed {
				open++
			}
		}

		meta, err := memlayout.ParseMeta([]byte(read(memlayout.MetaFile)))
		require.NoError(t, err)
		commits := strings.TrimSpace(gitOut(t, repo, "rev-list", "--count", "main", "--", memlayout.AgentDir(id)))
		require.Equal(t, commits, strconv.Itoa(int(meta.Version)), "%s: version = its commits", id)
		require.Equal(t, open, meta.OpenLoopsCount)
		// Exact, as the engine writes them.
		require.Equal(t, counter.Count(snap), meta.SnapshotTokenCount)
		require.Equal(t, counter.Count(facts), meta.FactsTokenCount)
		require.Equal(t, counter.Count(loops), meta.OpenLoopsTokenCount)
		require.Equal(t, meta.SnapshotTokenCount+meta.FactsTokenCount+meta.OpenLoopsTokenCount, meta.Layer1TokenCount)
	}

	log := gitOut(t, repo, "log", "-1", "--format=%B", "main")
	require.True(t, strings.HasPrefix(log, "memory-update: agent-"), log)
	require.Contains(t, log, "Entity-Refs: "+HeadEntityID)
	srcs, err := filepath.Glob(filepath.Join(a, "ds", objectsDir, "data", "agents", AgentID(0), "sources", "*.md"))
	require.NoError(t, err)
	require.Len(t, srcs, sourcesEach)
}
