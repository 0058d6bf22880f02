package memread

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/memread/memreadtest"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// Budgets every read is checked with (issue #23), plus random ones.
var budgetGrid = []int{1, 2, 5, 10, 50, 100, 500, 1000, 2000, 4000, 8000, 13000, 32000}

func tiktokenSource(t testing.TB, files map[string]string) (Source, func(string) int) {
	c, err := tokens.New(tokens.DefaultEncoding)
	require.NoError(t, err)
	src := Source{
		Read: func(rel string) (string, bool, error) { s, ok := files[rel]; return s, ok, nil },
		List: func(dir string) ([]string, error) {
			var out []string
			for k := range files {
				if strings.HasPrefix(k, dir) {
					out = append(out, k)
				}
			}
			sort.Strings(out)
			return out, nil
		},
		Count: c.Count,
	}
	return src, c.Count
}

// counted is what a read returns to an agent, counted as the package doc
// says: the reserved part, each file's header and content, each warning.
func counted(count func(string) int, req Request, res *Result) int {
	n := req.Reserved
	for _, f := range res.Files {
		n += count(Header(f.Rel)) + count(f.Content)
	}
	for _, w := range res.Warnings {
		n += count(w)
	}
	return n
}

func TestReadNeverExceedsBudget(t *testing.T) {
	c, err := tokens.New(tokens.DefaultEncoding)
	require.NoError(t, err)
	r := rand.New(rand.NewSource(23))
	for _, a := range []struct {
		id   string
		size memreadtest.Size
	}{{"full", memreadtest.Full}, {"small", memreadtest.Small}} {
		_, files := memreadtest.Agent(7, a.id, a.size, c.Count)
		src, count := tiktokenSource(t, files)
		blocks, err := CollectAlwaysLoad(src)
		require.NoError(t, err)
		extra := []File{{Rel: "diff/facts.md", Content: "--- a/facts.md\n+++ b/facts.md\n@@ -1 +1 @@\n" + files["facts.md"], Layer: 1}}
		budgets := append([]int{}, budgetGrid...)
		for i := 0; i < 8; i++ {
			budgets = append(budgets, 1+r.Intn(32000))
		}
		for _, mode := range []Mode{Basic, Wide, Deep, Temporal} {
			minOK := -1
			for _, reserved := range []int{0, 60} {
				for _, b := range budgets {
					req := Request{Mode: mode, MaxTokens: b, Today: "2026-02-17", Reserved: reserved, AlwaysLoad: blocks}
					if mode == Temporal {
						req.Extra = extra
					}
					name := fmt.Sprintf("%s/%s/reserved=%d/max=%d", a.id, mode, reserved, b)
					res, err := Read(src, req)
					if err != nil {
						var small *BudgetTooSmallError
						require.True(t, errors.As(err, &small), "%s: %v", name, err)
						require.Greater(t, small.Min, b, name)
						require.NotContains(t, err.Error(), "-", "%s: no negative figures: %v", name, err)
						require.Contains(t, err.Error(), fmt.Sprint(small.Min), name)
						req.MaxTokens = small.Min
						_, err := Read(src, req)
						require.NoError(t, err, "%s: the named minimum %d works", name, small.Min)
						if reserved == 0 {
							require.True(t, minOK < 0 || minOK == small.Min, "%s: one minimum per read", name)
							minOK = small.Min
						}
						continue
					}
					got := counted(count, req, res)
					require.LessOrEqual(t, got, b, name)
					require.LessOrEqual(t, got, Max(mode), name)
					require.Equal(t, got, res.Tokens, "%s: reported = counted", name)
					for _, f := range res.Files {
						require.Equal(t, count(f.Content), f.Tokens, "%s: %s", name, f.Rel)
					}
					if res.Truncated {
						require.NotEmpty(t, res.Warnings, "%s: a cut is said", name)
					}
					again, err := Read(src, req)
					require.NoError(t, err)
					require.True(t, reflect.DeepEqual(res, again), "%s: deterministic", name)
				}
			}
		}
	}
}

func TestReadNeverLoadsAlwaysLoadBlocksOfLayer2(t *testing.T) {
	c, err := tokens.New(tokens.DefaultEncoding)
	require.NoError(t, err)
	_, files := memreadtest.Agent(11, "cur", memreadtest.Full, c.Count)
	src, _ := tiktokenSource(t, files)
	blocks, err := CollectAlwaysLoad(src)
	require.NoError(t, err)
	for _, mode := range []Mode{Basic, Wide, Deep, Temporal} {
		res, err := Read(src, Request{Mode: mode, Today: "2026-02-17", AlwaysLoad: blocks})
		require.NoError(t, err)
		sawLayer1 := false
		for _, f := range res.Files {
			if strings.HasPrefix(f.Rel, AlwaysLoadPrefix) {
				from := strings.TrimPrefix(f.Rel, AlwaysLoadPrefix)
				require.Contains(t, []string{"snapshot.md", "facts.md", "open_loops.md"}, from, "%s: ALWAYS_LOAD only from Layer 1", mode)
				require.Equal(t, 1, f.Layer)
			}
			if strings.Contains(f.Content, memreadtest.Layer1Marker("cur")) {
				sawLayer1 = true
			}
			for _, l2 := range []string{"decisions.md", "changelog.md", "timeline/", "runs/"} {
				if strings.Contains(f.Content, memreadtest.Marker("cur", l2)) {
					require.True(t, strings.HasPrefix(f.Rel, l2), "%s: %s's ALWAYS_LOAD text reached %s", mode, l2, f.Rel)
				}
			}
		}
		if mode == Basic || mode == Wide {
			for _, f := range res.Files {
				for _, l2 := range []string{"decisions.md", "runs/", "timeline/", "changelog.md"} {
					require.NotContains(t, f.Content, memreadtest.Marker("cur", l2), "%s: %s", mode, f.Rel)
				}
			}
		}
		if mode != Temporal {
			require.True(t, sawLayer1, "%s: Layer 1 ALWAYS_LOAD blocks are still loaded", mode)
		}
	}
}
