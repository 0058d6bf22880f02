package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
)

// Issue #30, point 3: "the write plane (or a one-off job) publishes read
// state (search index, graph) at commit points …; a new deployment with an
// empty data dir boots from it and replays only the tail. Corrupt or
// missing state falls back to a full rebuild with progress logged, never
// to wrong answers." memoryd publish-read-state is the job: run on a data
// dir whose read state was never published, it publishes both; a process
// started with no search index and no entity graph then loads them and
// replays only the commit made after; a corrupt copy is rebuilt from the
// repository and the answers are the same.
func TestPublishReadStateJob(t *testing.T) {
	dataDir := t.TempDir()
	commit := func(d *deployment, agent, fact string) {
		t.Helper()
		code, resp := jsonCall(t, d, "POST", "/memory/"+agent+"/propose", `{"runId":"run_p1",
		  "updates":[{"file":"facts.md","operation":"append","section":"Suppliers","content":"- `+fact+`"}]}`, token(t, d, auth.RoleService))
		require.Equal(t, http.StatusOK, code, resp)
		code, resp = jsonCall(t, d, "POST", "/proposals/"+resp["proposalId"].(string)+":approve", `{}`, token(t, d, auth.RoleAdmin))
		require.Equal(t, http.StatusOK, code, resp)
	}
	searchable := func(d *deployment, word string) bool {
		code, res := jsonCall(t, d, "GET", "/memory/search?q="+word+"&agent_id=curator", "", token(t, d, auth.RoleService))
		hits, _ := res["results"].([]any)
		return code == http.StatusOK && len(hits) == 1
	}
	entity := func(d *deployment, id string) int {
		code, _ := jsonCall(t, d, "GET", "/entities/"+id, "", token(t, d, auth.RoleService))
		return code
	}
	start := func(args ...string) (process, *deployment) {
		p := startBinary(t, dataDir, append([]string{"--target=all"}, args...)...)
		return p, &deployment{grpcAddr: allAt(p.grpcAddr), httpAddr: p.httpAddr, dataDir: dataDir}
	}
	shared := filepath.Join(dataDir, "objects", "data", "read-state") // the folder store's layout

	// A history whose read state nobody published.
	p, d := start("--read-state-every=0")
	commit(d, "curator", "[[Heatwell]] services the greenhouse heaters")
	require.Eventually(t, func() bool { return searchable(d, "heaters") }, 30*time.Second, 20*time.Millisecond)
	p.stop()
	require.NoDirExists(t, shared)

	out, err := exec.Command(memorydBin, "publish-read-state", "--data-dir", dataDir).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, 2, strings.Count(string(out), `"msg":"read state published"`), string(out))
	require.FileExists(t, filepath.Join(shared, "search-index.tar.gz"))
	require.FileExists(t, filepath.Join(shared, "entity-graph.snapshot"))

	// One more commit, then a new deployment: no index, no graph on disk.
	p, d = start("--read-state-every=0")
	commit(d, "curator", "[[Coldframe]] supplies the frost cloth")
	require.Eventually(t, func() bool { return searchable(d, "frost") }, 30*time.Second, 20*time.Millisecond)
	p.stop()
	fresh := func() (process, *deployment) {
		for _, dir := range []string{"search-index", "entity-graph"} {
			require.NoError(t, os.RemoveAll(filepath.Join(dataDir, dir)))
		}
		return start()
	}
	p, d = fresh()
	eventually := func(cond func() bool, what string) {
		t.Helper()
		require.Eventually(t, cond, 30*time.Second, 20*time.Millisecond, "%s\n%s", what, p.logs())
	}
	eventually(func() bool {
		return strings.Count(p.logs(), `"msg":"read state loaded from the object store"`) == 2
	}, "both states loaded")
	eventually(func() bool { return searchable(d, "heaters") && searchable(d, "frost") }, "the published index, and the tail replayed")
	eventually(func() bool { return entity(d, "heatwell") == http.StatusOK && entity(d, "coldframe") == http.StatusOK }, "the graph too")
	require.NotContains(t, p.logs(), "not loaded")
	p.stop()

	// A corrupt copy: rebuilt from the repository, the same answers.
	require.NoError(t, os.WriteFile(filepath.Join(shared, "search-index.tar.gz"), []byte("not a tar"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(shared, "entity-graph.snapshot"), []byte("not a graph"), 0o600))
	p, d = fresh()
	eventually(func() bool {
		return strings.Contains(p.logs(), "shared search index not loaded; indexing from the repository") &&
			strings.Contains(p.logs(), "shared entity graph snapshot not loaded; replaying history")
	}, "a corrupt copy is refused")
	eventually(func() bool { return searchable(d, "heaters") && searchable(d, "frost") }, "the index rebuilt")
	eventually(func() bool { return entity(d, "heatwell") == http.StatusOK && entity(d, "coldframe") == http.StatusOK }, "the graph rebuilt")

	// The job refuses a target it does not run.
	out, err = exec.Command(memorydBin, "publish-read-state", "--data-dir", t.TempDir(), "--target=write").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), `publish-read-state runs search-index,entity-graph; --target "write" is not for it`)
}
