package contextassembly

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// ListHistory "lists the commits that touched an agent's memory, newest
// first": every page, end to end, is what git log says, among many other
// agents' commits, with since/until and a commit landing between calls.
func TestListHistoryIsGitLogOfTheAgent(t *testing.T) {
	e := newEnv(t)
	for i := range 60 {
		files := map[string]string{fmt.Sprintf("memory/other-%d/facts.md", i%7): fmt.Sprint("- f", i, "\n")}
		switch i % 10 {
		case 0:
			files["memory/cur/facts.md"] = fmt.Sprint("- c", i, "\n")
		case 3:
			files = map[string]string{"logic/cur/current.pseudo.md": fmt.Sprint("p", i, "\n")}
		case 5:
			files = map[string]string{"memory/cur/snapshot.md": fmt.Sprint("s", i, "\n")}
		}
		e.commit(fmt.Sprintf("commit %d", i), files)
	}
	gitLog := func(args ...string) []string {
		bin, err := exec.LookPath("git")
		if err != nil {
			t.Skip("git binary not available")
		}
		out, err := exec.Command(bin, append([]string{"--git-dir=" + e.repo.Path(), "log", "--first-parent", "--format=%H", "main"},
			append(args, "--", "memory/cur/", "logic/cur/")...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.Fields(string(out))
	}
	list := func(req *memoryv1.ListHistoryRequest) []string {
		var shas []string
		for {
			resp, err := e.client.ListHistory(e.svc(), req)
			require.NoError(t, err)
			for _, c := range resp.GetCommits() {
				shas = append(shas, c.GetSha())
			}
			if resp.GetNextPageToken() == "" {
				return shas
			}
			require.Len(t, resp.GetCommits(), int(req.GetPageSize()), "a full page before a next page")
			req.PageToken = resp.GetNextPageToken()
		}
	}
	want := gitLog()
	require.Len(t, want, 18)
	require.Equal(t, want, list(&memoryv1.ListHistoryRequest{AgentId: "cur", PageSize: 4}))

	// since/until bound commit times (e.commit: one hour apart).
	since, until := e.when.Add(-40*time.Hour), e.when.Add(-10*time.Hour)
	require.Equal(t, gitLog("--since="+since.Format(time.RFC3339), "--until="+until.Format(time.RFC3339)),
		list(&memoryv1.ListHistoryRequest{AgentId: "cur", PageSize: 3, Since: since.Format(time.RFC3339), Until: until.Format(time.RFC3339)}))

	// A commit that lands is listed by the next call.
	h := e.commit("late", map[string]string{"memory/cur/facts.md": "- late\n"})
	first, err := e.client.ListHistory(e.svc(), &memoryv1.ListHistoryRequest{AgentId: "cur", PageSize: 1})
	require.NoError(t, err)
	require.Equal(t, h.String(), first.GetCommits()[0].GetSha())

	// A page token is a commit of this agent's list: another agent's
	// commit, or no commit, is refused.
	other := e.commit("other", map[string]string{"memory/other-1/facts.md": "- x\n"})
	for _, tok := range []string{other.String(), strings.Repeat("ab", 20), "HEAD"} {
		_, err := e.client.ListHistory(e.svc(), &memoryv1.ListHistoryRequest{AgentId: "cur", PageToken: tok})
		require.Equal(t, codes.InvalidArgument, status.Code(err), tok)
	}
}
