package memrepo

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// LastChanged reports when each of the wanted files last changed on the
// first-parent history of head: the committer time of the newest commit
// that touched it. dir limits the search to one folder ("memory/"), which
// lets git skip every commit that did not touch it.
//
// It runs `git log` rather than walking history in Go: git's pathspec-limited
// tree diffs are an order of magnitude faster on long histories, and the log
// is read only until every wanted file has been seen. Files never seen are
// absent from the result.
func (r *Repo) LastChanged(ctx context.Context, head plumbing.Hash, dir string, want map[string]bool) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(want))
	if len(want) == 0 {
		return out, nil
	}
	if err := CheckPath(strings.TrimSuffix(dir, "/")); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-c", "core.quotePath=false", "--git-dir", r.Path(), "log", "--first-parent", "--no-renames",
		"--format=%x00%ct", "--name-only", head.String(), "--", dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git log: %w", err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var when time.Time
	for sc.Scan() && len(out) < len(want) {
		line := sc.Text()
		if ts, ok := strings.CutPrefix(line, "\x00"); ok {
			sec, err := strconv.ParseInt(ts, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("git log: bad time %q", ts)
			}
			when = time.Unix(sec, 0).UTC()
			continue
		}
		if _, seen := out[line]; line != "" && want[line] && !seen {
			out[line] = when
		}
	}
	if len(out) == len(want) {
		cancel() // the rest of history is not needed
		_ = cmd.Wait()
		return out, nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("git log: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
