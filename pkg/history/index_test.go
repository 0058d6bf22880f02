package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/memrepo"
)

// git runs the real git binary on the bare repository: what the index
// answers is checked against git log, not against a second walk of ours.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git binary not available")
	}
	cmd := exec.Command(bin, append([]string{"--git-dir=" + dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v:\n%s", args, out)
	return string(out)
}

// gitAgentLog is `git log --first-parent -- memory/<agent>/ logic/<agent>/`,
// oldest first.
func gitAgentLog(t *testing.T, dir, agent string) []plumbing.Hash {
	out := git(t, dir, "log", "--first-parent", "--format=%H", "main", "--", "memory/"+agent+"/", "logic/"+agent+"/")
	var hashes []plumbing.Hash
	for _, l := range strings.Fields(out) {
		hashes = append(hashes, plumbing.NewHash(l))
	}
	slices.Reverse(hashes)
	return hashes
}

// randomCommits makes n commits on main: most change one agent's files,
// some two agents' (a person's commit), some logic/ or files outside any
// agent folder, some delete.
func randomCommits(t *testing.T, r *memrepo.Repo, rng *rand.Rand, agents []string, n int) {
	ctx := context.Background()
	for i := range n {
		head, err := r.Head(ctx)
		require.NoError(t, err)
		pick := func() string { return agents[rng.IntN(len(agents))] }
		var changes []memrepo.Change
		switch k := rng.IntN(10); {
		case k < 6:
			changes = append(changes, memrepo.Change{Path: "memory/" + pick() + "/facts.md", Content: fmt.Appendf(nil, "- fact %d\n", i)})
		case k < 7:
			changes = append(changes,
				memrepo.Change{Path: "memory/" + pick() + "/snapshot.md", Content: fmt.Appendf(nil, "s %d\n", i)},
				memrepo.Change{Path: "memory/" + pick() + "/runs/run_" + fmt.Sprint(i) + ".md", Content: []byte("r\n")})
		case k < 8:
			changes = append(changes, memrepo.Change{Path: "logic/" + pick() + "/current.pseudo.md", Content: fmt.Appendf(nil, "p %d\n", i)})
		case k < 9:
			changes = append(changes, memrepo.Change{Path: "README.md", Content: fmt.Appendf(nil, "readme %d\n", i)})
		default:
			a := pick()
			changes = append(changes, memrepo.Change{Path: "memory/" + a + "/tmp.md", Content: []byte("t\n")})
			if _, err := r.ReadFile(ctx, head, "memory/"+a+"/tmp.md"); err == nil {
				changes = []memrepo.Change{{Path: "memory/" + a + "/tmp.md", Delete: true}}
			}
		}
		_, err = r.Commit(ctx, memrepo.CommitRequest{Parent: head, Changes: changes, Message: fmt.Sprintf("commit %d", i)})
		require.NoError(t, err)
	}
}

func requireMatchesGit(t *testing.T, x *AgentIndex, r *memrepo.Repo, agents []string) {
	t.Helper()
	for _, a := range agents {
		got, err := x.Commits(context.Background(), r, a)
		require.NoError(t, err)
		require.Equal(t, gitAgentLog(t, r.Path(), a), got, "agent %s", a)
	}
}

func newRepo(t *testing.T) *memrepo.Repo {
	r, err := memrepo.Init(context.Background(), filepath.Join(t.TempDir(), "memory.git"), memrepo.InitOptions{})
	require.NoError(t, err)
	return r
}

func TestAgentIndexMatchesGitLog(t *testing.T) {
	r := newRepo(t)
	rng := rand.New(rand.NewPCG(1, 2))
	agents := []string{"a", "b", "c", "d", "never-committed"}
	var x AgentIndex
	requireMatchesGit(t, &x, r, agents) // the root commit only
	for range 4 {
		// Incrementally: each round indexes only the new commits.
		randomCommits(t, r, rng, agents[:4], 40)
		requireMatchesGit(t, &x, r, agents)
	}
	require.Positive(t, x.Pairs())

	// main rewritten (a person resets it and commits on): the index
	// notices that its head is gone and rebuilds.
	old := strings.TrimSpace(git(t, r.Path(), "rev-parse", "main~100"))
	git(t, r.Path(), "update-ref", "refs/heads/main", old)
	randomCommits(t, r, rng, agents[:4], 20)
	requireMatchesGit(t, &x, r, agents)
}

func TestAgentIndexConcurrentCallersSeeTheirCommits(t *testing.T) {
	r := newRepo(t)
	rng := rand.New(rand.NewPCG(3, 4))
	agents := []string{"a", "b", "c"}
	var x AgentIndex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for range 20 {
				head, err := r.Head(context.Background())
				require.NoError(t, err)
				got, err := x.Commits(context.Background(), r, agents[w%len(agents)])
				require.NoError(t, err)
				// Read-your-writes: the list reaches at least the head read
				// before the call (if that head touched the agent).
				if changed, _ := r.ChangedFiles(context.Background(), head); slices.ContainsFunc(changed, func(p string) bool {
					return strings.HasPrefix(p, "memory/"+agents[w%len(agents)]+"/")
				}) {
					require.Contains(t, got, head)
				}
			}
		})
	}
	randomCommits(t, r, rng, agents, 60)
	wg.Wait()
	requireMatchesGit(t, &x, r, agents)
}

func TestAgentIndexCallerGivingUpKeepsTheWork(t *testing.T) {
	r := newRepo(t)
	randomCommits(t, r, rand.New(rand.NewPCG(5, 6)), []string{"a", "b"}, 30)
	var x AgentIndex
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := x.Commits(ctx, r, "a")
	require.ErrorIs(t, err, context.Canceled)
	requireMatchesGit(t, &x, r, []string{"a", "b"})
}
