package history

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// AgentIndex lists, for each agent, the commits of main's first-parent
// history that touched its folders (memory/<agent>/ or logic/<agent>/).
// Listing an agent's history from it costs the agent's own commits: a walk
// of main diffs every commit of every agent to find them, which took a
// second for an agent with few commits in a repository of 1,000 agents and
// the console asks for it every few seconds.
//
// The index follows main incrementally — each Commits call diffs only the
// commits since the last one — and rebuilds from scratch when main no
// longer contains the commit it was built to (history rewritten). It holds
// one hash per (agent, commit) pair: 20 bytes a commit, as nearly every
// commit is one agent's.
//
// The zero AgentIndex is ready to use.
type AgentIndex struct {
	mu      sync.Mutex
	head    plumbing.Hash
	byAgent map[string][]plumbing.Hash // oldest first; only ever appended to
	pairs   int
	// Updates run one at a time, numbered from 1: started is the newest
	// one begun, finished the newest one ended (with err), building is
	// closed when the running one ends (nil: none runs).
	started, finished int
	building          chan struct{}
	err               error
}

// Commits returns the commits of agent in main's first-parent history,
// oldest first, up to main's head as of the call or later. The caller must
// not modify the slice.
//
// The update it may need runs detached from ctx, so a caller that gives up
// (a short request deadline on a first, long build) does not throw away
// the work for the next one: ctx ends only the wait.
func (x *AgentIndex) Commits(ctx context.Context, repo *memrepo.Repo, agent string) ([]plumbing.Hash, error) {
	head, err := repo.Head(ctx)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.building == nil && x.head == head && x.byAgent != nil {
		return x.byAgent[agent], nil
	}
	// An update begun before this call may have read an older head: wait
	// for one that begins after it. Callers arriving meanwhile share it.
	need := x.started + 1
	for x.finished < need {
		if x.building == nil {
			x.started++
			x.building = make(chan struct{})
			go x.update(context.WithoutCancel(ctx), repo, x.started, x.building)
		}
		done := x.building
		x.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			x.mu.Lock()
			return nil, ctx.Err()
		}
		x.mu.Lock()
	}
	if x.err != nil {
		return nil, x.err
	}
	return x.byAgent[agent], nil
}

// Pairs is the number of (agent, commit) entries held.
func (x *AgentIndex) Pairs() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.pairs
}

// update, number n, brings the index to main's head and closes done.
func (x *AgentIndex) update(ctx context.Context, repo *memrepo.Repo, n int, done chan struct{}) {
	x.mu.Lock()
	from := x.head
	x.mu.Unlock()

	type touched struct {
		hash   plumbing.Hash
		agents []string
	}
	var news []touched // newest first
	found := from.IsZero()
	head, err := repo.Head(ctx)
	if err == nil {
		err = repo.Walk(ctx, head, func(c *object.Commit) error {
			if c.Hash == from {
				found = true
				return memrepo.ErrStopWalk
			}
			changed, err := repo.ChangedFiles(ctx, c.Hash)
			if err != nil {
				return err
			}
			news = append(news, touched{c.Hash, agentsOf(changed)})
			return nil
		})
	}

	x.mu.Lock()
	defer x.mu.Unlock()
	defer close(done)
	x.building, x.finished, x.err = nil, n, err
	if err != nil {
		return
	}
	if !found || x.byAgent == nil {
		// The walk reached the root without meeting the old head: main was
		// rewritten (a mirror re-fetched), and news is all of its history.
		x.byAgent, x.pairs = map[string][]plumbing.Hash{}, 0
	}
	for i := len(news) - 1; i >= 0; i-- {
		for _, a := range news[i].agents {
			x.byAgent[a] = append(x.byAgent[a], news[i].hash)
			x.pairs++
		}
	}
	x.head = head
}

// agentsOf returns the agents whose folders the paths touch, each once.
func agentsOf(paths []string) []string {
	var agents []string
	for _, p := range paths {
		root, rest, ok := strings.Cut(p, "/")
		if !ok || (root != memlayout.MemoryDir && root != "logic") {
			continue
		}
		if agent, _, ok := strings.Cut(rest, "/"); ok && !slices.Contains(agents, agent) {
			agents = append(agents, agent)
		}
	}
	return agents
}
