package benchharness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PublishedState is the read state the one-off job published for a data
// set (memoryd publish-read-state, issue #30, point 3): at main~Tail, so a
// first start boots from it and replays the last Tail commits, as a new
// deployment does after the write plane or an operator's job published.
type PublishedState struct {
	Tail   int    `json:"tail"`
	Commit string `json:"commit"`
	// JobSeconds is how long the job took: a full build of the search
	// index and the entity graph, what a first start with nothing
	// published costs.
	JobSeconds float64 `json:"jobSeconds"`
	// Memoryd is the binary's version: a state is only reused by the
	// memoryd that wrote it.
	Memoryd string `json:"memoryd"`
	Cached  bool   `json:"cached"`
}

// publishTail is how many commits a first start replays after the
// published state: 1 % of the history, at most 1,000.
func publishTail(commits int) int { return min(1000, max(1, commits/100)) }

// publishState runs the one-off job on a copy of the data set whose main
// is publishTail commits back and keeps what it published in the data
// set's object store (objects/{data,meta}/read-state/), so every
// deployment of the data set starts from it. Cached with the data set,
// per memoryd version.
func (h *harness) publishState(ctx context.Context, ds string, m *Manifest) (*PublishedState, error) {
	version, err := exec.CommandContext(ctx, h.bin, "version").Output()
	if err != nil {
		return nil, fmt.Errorf("memoryd version: %w", err)
	}
	marker := filepath.Join(ds, "published.json")
	if data, err := os.ReadFile(marker); err == nil {
		var p PublishedState
		if json.Unmarshal(data, &p) == nil && p.Commit != "" && p.Memoryd == strings.TrimSpace(string(version)) {
			p.Cached = true
			return &p, nil
		}
	}
	tmp := filepath.Join(h.work, "runs", "publish-"+filepath.Base(ds))
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := cloneDataset(ds, tmp); err != nil {
		return nil, err
	}
	p := &PublishedState{Tail: publishTail(m.Commits), Memoryd: strings.TrimSpace(string(version))}
	repo := filepath.Join(tmp, "memory.git")
	sha, err := exec.CommandContext(ctx, "git", "--git-dir", repo, "rev-parse", "--verify", "main~"+strconv.Itoa(p.Tail)).Output()
	if err != nil {
		return nil, fmt.Errorf("main~%d: %w", p.Tail, err)
	}
	p.Commit = strings.TrimSpace(string(sha))
	if out, err := exec.CommandContext(ctx, "git", "--git-dir", repo, "update-ref", "refs/heads/main", p.Commit).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("update-ref: %w: %s", err, out)
	}
	h.logf("data set %s: publishing the read state at main~%d (memoryd publish-read-state)", filepath.Base(ds), p.Tail)
	start := time.Now()
	out, err := exec.CommandContext(ctx, h.bin, "publish-read-state", "--data-dir", tmp, "--log-level=warn").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("publish-read-state: %w: %s", err, out)
	}
	p.JobSeconds = round3(time.Since(start).Seconds())
	h.logf("data set %s: read state published in %.0f s", filepath.Base(ds), p.JobSeconds)
	// Renamed, not copied: the folder store's sidecars name the inode.
	for _, tree := range []string{"data", "meta"} {
		src, dst := filepath.Join(tmp, "objects", tree, "read-state"), filepath.Join(ds, "objects", tree, "read-state")
		if err := os.RemoveAll(dst); err != nil {
			return nil, err
		}
		if err := os.Rename(src, dst); err != nil {
			return nil, err
		}
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return p, os.WriteFile(marker, data, 0o644)
}
