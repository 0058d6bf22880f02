package odb

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The object database is tested on repositories the git binary writes
// (memrepo, which writes through this package, cannot be imported here).

const gitBin = "/usr/bin/git"

// mustGit runs git in dir with stdin and returns its output, isolated from
// the developer's configuration.
func mustGit(t testing.TB, dir, stdin string, args ...string) string {
	t.Helper()
	if _, err := os.Stat(gitBin); err != nil {
		t.Skip("git binary not available")
	}
	cmd := exec.Command(gitBin, append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

// bareRepo returns the path of a new, empty bare repository.
func bareRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "memory.git")
	mustGit(t, filepath.Dir(dir), "", "init", "-q", "--bare", dir)
	return dir
}

// file is one file a test commit writes.
type file struct{ path, content string }

// importCommits commits each element of commits (its files written over
// the previous commit's tree) on branch with git fast-import, which stores
// them as one new pack.
func importCommits(t testing.TB, dir, branch string, commits [][]file) {
	t.Helper()
	var b strings.Builder
	data := func(s string) { fmt.Fprintf(&b, "data %d\n%s\n", len(s), s) }
	for i, files := range commits {
		fmt.Fprintf(&b, "commit refs/heads/%s\ncommitter Test <test@example.org> %d +0000\n", branch, 1700000000+i)
		data(fmt.Sprint("c", i))
		for _, f := range files {
			fmt.Fprintf(&b, "M 100644 inline %s\n", f.path)
			data(f.content)
		}
	}
	mustGit(t, dir, b.String(), "-c", "fastimport.unpackLimit=1", "fast-import", "--quiet")
}

func packFiles(t testing.TB, dir string) []string {
	t.Helper()
	packs, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "pack-*.pack"))
	require.NoError(t, err)
	return packs
}
