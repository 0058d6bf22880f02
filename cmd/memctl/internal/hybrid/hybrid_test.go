package hybrid

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

func edge(from, to string) *memoryv1.Edge {
	return &memoryv1.Edge{FromEntityId: from, ToEntityId: to, Relation: memoryv1.Relation_RELATION_USED_SKILL}
}

// Three episodes: two used the skill "sql", one "ci"; every episode links
// to the outcome hub "success".
func episodes() *Graph {
	ended := edge("ep1", "gone")
	ended.ValidTo = timestamppb.Now()
	return NewGraph([]*memoryv1.Edge{
		edge("ep1", "sql"), edge("ep2", "sql"), edge("ep3", "ci"),
		edge("ep1", "success"), edge("ep2", "success"), edge("ep3", "success"),
		edge("ep1", "sql"), // a parallel edge counts once
		ended,
	})
}

func TestRankSpreadsFromTheSeedsAndSplitsAtHubs(t *testing.T) {
	got := Rank(episodes(), []Seed{{EntityID: "ep1", Score: 2}}, 2, nil)
	byID := map[string]Ranked{}
	for _, r := range got {
		byID[r.EntityID] = r
	}
	require.Equal(t, "ep1", got[0].EntityID, "the seed ranks first")
	require.Equal(t, 0, byID["ep1"].Distance)
	// Hop 1: ep1 passes 2 × ½ split over its 2 neighbours: 0.5 each.
	require.InDelta(t, 0.5, byID["sql"].Score, 1e-9)
	require.InDelta(t, 0.5, byID["success"].Score, 1e-9)
	require.Equal(t, 1, byID["sql"].Distance)
	// Hop 2: sql passes 0.5 × ½ over 2 (ep1, ep2); success 0.5 × ½ over 3.
	require.InDelta(t, 0.125+0.25/3, byID["ep2"].Score, 1e-9, "ep2 shares the skill and the hub")
	require.InDelta(t, 0.25/3, byID["ep3"].Score, 1e-9, "ep3 shares only the hub")
	require.Greater(t, byID["ep2"].Score, byID["ep3"].Score)
	require.Equal(t, 2, byID["ep3"].Distance)
	require.NotContains(t, byID, "gone", "ended edges are not walked")
	require.Equal(t, []string{"ep1"}, byID["ep3"].Via)
}

func TestRankAddsSeedsAndIsDeterministic(t *testing.T) {
	g := episodes()
	seeds := []Seed{{EntityID: "ep1", Score: 1}, {EntityID: "ep2", Score: 1}, {EntityID: "ep1", Score: 1}}
	a := Rank(g, seeds, 2, nil)
	b := Rank(g, seeds, 2, nil)
	require.Equal(t, a, b)
	require.Equal(t, "ep1", a[0].EntityID, "named by two hits, its score adds up")
	require.Equal(t, "ep2", a[1].EntityID)
	require.Equal(t, []string{"ep2", "ep1"}, a[1].Via, "its own seed contributes most, ep1's spread less")
}

func TestRankStaysInsideTheScope(t *testing.T) {
	allowed := map[string]bool{"ep1": true, "sql": true, "success": true}
	got := Rank(episodes(), []Seed{{EntityID: "ep1", Score: 1}, {EntityID: "ep3", Score: 5}}, 3, func(id string) bool { return allowed[id] })
	for _, r := range got {
		require.True(t, allowed[r.EntityID], r.EntityID)
	}
	require.Len(t, got, 3)
}

func TestLinks(t *testing.T) {
	got := Links("- **Task:** [[task:task-1a2b|Fix CI]] and [[skill:go-testing]], [[Failure-Mode:timeout]] [[plain]] [[bad\nlink]] [[a[b]] [[x:y]]")
	require.Equal(t, []Link{
		{Type: "task", Target: "task-1a2b", Shown: "Fix CI"},
		{Type: "skill", Target: "go-testing"},
		{Type: "failure_mode", Target: "timeout"},
		{Target: "plain"},
		{Target: "x:y"},
	}, got)
	require.Equal(t, "Fix CI", got[0].Label())
	require.Equal(t, "a/b/c", Link{Type: "context", Target: " a : b/ c "}.Label())
}

func TestMatchContexts(t *testing.T) {
	paths := []string{"programming", "programming/java", "programming/java/patterns", "programming/python/data-science", "infra/ci"}
	require.Equal(t, []string{"programming/java", "programming/java/patterns"},
		MatchContexts([]string{"We discuss Java patterns today"}, paths), "a match brings its descendants")
	require.Equal(t, []string{"programming/python/data-science"}, MatchContexts([]string{"some data science"}, paths))
	require.Equal(t, []string{"infra/ci", "programming/java", "programming/java/patterns"},
		MatchContexts([]string{"the CI is red", "java"}, paths), "several texts")
	require.Empty(t, MatchContexts([]string{"javascript"}, paths), "words, not substrings")
}
