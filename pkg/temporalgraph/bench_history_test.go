package temporalgraph

import (
	"fmt"
	"testing"
)

// BenchmarkPastQueries: Node and Neighbors (depth 2) on the 10,000-commit
// graph as of a point half-way through its history and of one ten commits
// before its end, where closed intervals count (issue #25: they are on
// disk), and History.
func BenchmarkPastQueries(b *testing.B) {
	commits := syntheticHistory(10_000)
	g := New()
	b.Cleanup(func() { _ = g.Close() })
	for _, c := range commits {
		g.ApplyCommit(c)
	}
	mid := commits[len(commits)/2].Time
	for _, q := range []struct {
		name string
		run  func(id string)
	}{
		{"node-past", func(id string) { g.Node(id, mid) }},
		{"neighbors-depth2-past", func(id string) { g.Neighbors(id, 2, nil, mid) }},
		{"node-recent", func(id string) { g.Node(id, commits[len(commits)-10].Time) }},
		{"history", func(id string) { g.History(id) }},
	} {
		b.Run(q.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				q.run(fmt.Sprintf("entity-%d", i%500))
				i++
			}
		})
	}
}
