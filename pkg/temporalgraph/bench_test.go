package temporalgraph

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// syntheticHistory makes n commits over 100 agents: each rewrites one
// agent's facts.md with a handful of wiki links drawn from 500 entities.
func syntheticHistory(n int) []Commit {
	out := make([]Commit, 0, n)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		agent := fmt.Sprintf("agent-%02d", i%100)
		var b strings.Builder
		fmt.Fprintf(&b, "# Facts: %s\n\n## Domain\n", agent)
		for f := range 8 {
			fmt.Fprintf(&b, "- [[Entity %d]] depends on [[Entity %d]] since run %d\n", (i*7+f*13)%500, (i*11+f*17)%500, i)
		}
		content := b.String()
		out = append(out, Commit{Sha: fmt.Sprintf("%040x", i), Time: start.Add(time.Duration(i) * time.Minute), AgentID: agent,
			Files: map[string]*string{"memory/" + agent + "/facts.md": &content}})
	}
	return out
}

// BenchmarkBuild10kCommits: applying a 10,000-commit history from scratch.
func BenchmarkBuild10kCommits(b *testing.B) {
	commits := syntheticHistory(10_000)
	b.ResetTimer()
	for range b.N {
		g := New()
		for _, c := range commits {
			g.ApplyCommit(c)
		}
	}
}

// BenchmarkQueries: Node and Neighbors (depth 2) latency on that graph.
func BenchmarkQueries(b *testing.B) {
	g := New()
	for _, c := range syntheticHistory(10_000) {
		g.ApplyCommit(c)
	}
	for _, q := range []struct {
		name string
		run  func(id string)
	}{
		{"node", func(id string) { g.Node(id, time.Time{}) }},
		{"neighbors-depth2", func(id string) { g.Neighbors(id, 2, nil, time.Time{}) }},
	} {
		b.Run(q.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := range b.N {
				t0 := time.Now()
				q.run(fmt.Sprintf("entity-%d", i%500))
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}

// syntheticFacts is a facts.md near its Layer 1 limit, shaped like the
// benchmark harness's: ~250 bullets in a few sections, a third of them
// opening with a wiki link.
func syntheticFacts() string {
	var b strings.Builder
	b.WriteString("# Facts: agent-00004\n")
	for s, section := range []string{"Domain", "People", "Systems", "Benchmark"} {
		fmt.Fprintf(&b, "\n## %s\n", section)
		for i := range 64 {
			n := s*64 + i
			if n%3 == 0 {
				fmt.Fprintf(&b, "- [[project:Entity %d]] pipeline keeps partition %d with %d keys in the region of [[Entity %d]]\n", n%97, n, n*7%41, n%13)
				continue
			}
			fmt.Fprintf(&b, "- The service %d publishes %d tables for the team %d every %d days\n", n, n*3%17, n%29, n%31)
		}
	}
	return b.String()
}

// BenchmarkDeriveFacts: what the graph derives from one changed facts.md,
// the per-commit cost of following the write plane.
func BenchmarkDeriveFacts(b *testing.B) {
	content := syntheticFacts()
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		derive("memory/agent-00004/facts.md", content)
	}
}

// BenchmarkDeriveEpisode: what the graph derives from one episode run file
// (episode_test.go's failureRun), the per-episode cost of ingesting.
func BenchmarkDeriveEpisode(b *testing.B) {
	b.SetBytes(int64(len(failureRun)))
	b.ReportAllocs()
	for b.Loop() {
		derive(runPath, failureRun)
	}
}
