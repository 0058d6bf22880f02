package memrepo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// crashRepoEnv tells a re-executed test binary to act as the commit loop of
// TestCrashSafety instead of running tests.
const crashRepoEnv = "MEMREPO_CRASH_HELPER_REPO"

// TestHelperProcessCommitLoop is not a real test: run by TestCrashSafety in
// a child process, it commits random changes as fast as it can until it is
// killed, alternating single commits and chains of up to four, and merging
// packs as the apply engine does. It prints "ready" once it has committed at
// least once.
func TestHelperProcessCommitLoop(t *testing.T) {
	path := os.Getenv(crashRepoEnv)
	if path == "" {
		t.Skip("helper process for TestCrashSafety")
	}
	ctx := context.Background()
	r, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		h, err := r.Head(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "head:", err)
			os.Exit(2)
		}
		// Distinct agents per chain, so each request's deletes still apply.
		var reqs []CommitRequest
		for _, a := range rand.Perm(5)[:1+rand.IntN(4)] {
			agent := fmt.Sprintf("memory/agent-%d", a)
			changes := []Change{
				put(agent+"/facts.md", fmt.Sprintf("fact %d %x\n", i, rand.Uint64())),
				put(fmt.Sprintf("%s/timeline/day-%d.md", agent, rand.IntN(20)), strings.Repeat("x", rand.IntN(4000))),
			}
			if files, err := r.ListFiles(ctx, h, agent+"/timeline"); err == nil && len(files) > 3 {
				changes = append(changes, del(files[rand.IntN(len(files))]))
			}
			reqs = append(reqs, CommitRequest{Changes: changes, Message: fmt.Sprintf("memory-update: crash %d.%d", i, a)})
		}
		_, err = r.CommitChain(ctx, h, reqs)
		if err != nil && !errors.Is(err, ErrNoChanges) {
			fmt.Fprintln(os.Stderr, "commit:", err)
			os.Exit(2)
		}
		if err := r.CompactPacks(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "compact:", err)
			os.Exit(2)
		}
		if i == 0 {
			fmt.Println("ready")
		}
	}
}

// TestCrashSafety SIGKILLs a committing process at random moments and checks
// after each kill that the repository is intact: fsck --strict is clean,
// main resolves to a commit whose whole tree is readable, history only grows,
// and (after RecoverStaleLock) committing works again.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	if os.Getenv(crashRepoEnv) != "" {
		t.Skip("inside the helper process")
	}
	ctx := context.Background()
	r := newTestRepo(t)
	const kills = 20
	prevCount := 1
	staleLocks, tmpFiles := 0, 0
	for k := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessCommitLoop$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashRepoEnv+"="+r.Path())
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())

		ready := make(chan error, 1)
		go func() {
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err == nil && line != "ready\n" {
				err = fmt.Errorf("unexpected output %q", line)
			}
			ready <- err
		}()
		select {
		case err := <-ready:
			require.NoError(t, err, "helper stderr: %s", stderr.String())
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("helper did not start; stderr: %s", stderr.String())
		}
		// Random moment inside the commit loop (a commit takes a few ms).
		time.Sleep(time.Duration(rand.IntN(30000)) * time.Microsecond)
		require.NoError(t, cmd.Process.Kill()) // SIGKILL on Unix
		err = cmd.Wait()
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr, "helper must die by the kill, not exit: %s", stderr.String())
		require.False(t, exitErr.Exited(), "helper exited on its own: %s", stderr.String())

		// The killed process was the only writer, so any lock is stale.
		fresh, err := Open(r.Path())
		require.NoError(t, err)
		removed, err := fresh.RecoverStaleLock(0)
		require.NoError(t, err)
		if removed {
			staleLocks++
		}
		tmp := tmpPackFiles(t, r)
		tmpFiles = len(tmp)

		requireFsckClean(t, r.Path())
		count, err := strconv.Atoi(strings.TrimSpace(mustGit(t, r.Path(), "rev-list", "--count", "main")))
		require.NoError(t, err)
		require.GreaterOrEqual(t, count, prevCount, "history never shrinks")
		prevCount = count

		h := head(t, fresh)
		files, err := fresh.ListFiles(ctx, h, "")
		require.NoError(t, err)
		require.Equal(t, lsTree(t, r.Path(), "main"), files)
		for _, f := range files {
			got, err := fresh.ReadFile(ctx, h, f)
			require.NoError(t, err, f)
			require.Equal(t, mustGit(t, r.Path(), "cat-file", "blob", "main:"+f), string(got), f)
		}
		t.Logf("kill %d: %d commits, stale lock: %v, temp files: %d", k, count, removed, len(tmp))
	}
	packs := packFiles(t, r)
	t.Logf("%d kills: %d stale locks recovered, %d temp pack files left (harmless, git gc prunes them), %d packs",
		kills, staleLocks, tmpFiles, len(packs))

	// Still writable, and fsck clean afterwards.
	commit(t, r, "after crashes", put("memory/after.md", "ok"))
	requireFsckClean(t, r.Path())
}
