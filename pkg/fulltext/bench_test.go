package fulltext

import (
	"fmt"
	"strings"
	"testing"

	"github.com/blugelabs/bluge/index"

	"github.com/garden-bloom/memory/pkg/chunker"
	"github.com/garden-bloom/memory/pkg/textanalysis"
)

// BenchmarkUpsertAppend: the bookkeeping of re-indexing a near-limit
// facts.md after one bullet was appended (what the index does for most
// commits): fingerprint every chunk, compare with the old ones, queue the
// one new chunk.
func BenchmarkUpsertAppend(b *testing.B) {
	var md strings.Builder
	md.WriteString("# Facts: agent-1\n\n## Domain\n")
	for i := range 250 {
		fmt.Fprintf(&md, "- The service %d publishes %d tables for the team %d every %d days\n", i, i*3%17, i%29, i%31)
	}
	file := func(content string) File {
		return File{Path: "memory/agent-1/facts.md", AgentID: "agent-1", Layer: 1, Kind: "facts", Version: "v",
			Chunks: chunker.Split(content, chunker.Options{MaxChars: 4000})}
	}
	before := file(md.String())
	md.WriteString("- Benchmark probe zqxyz7 was recorded by the load driver\n")
	after := file(md.String())
	ix := &Index{analyzer: textanalysis.NewAnalyzer()}
	old := newFileMeta(before)
	b.ReportAllocs()
	for b.Loop() {
		ix.upsertFile(index.NewBatch(), old, after)
	}
	if n := ix.chunkWrites.Load(); n != int64(b.N) {
		b.Fatalf("%d chunks written in %d upserts, want one each", n, b.N)
	}
}

// BenchmarkExcerpt: the excerpts of a search's ten hits, bullets like the
// benchmark's facts, for a three-word query. "whole" is every word analysed
// (how excerpts were marked before queryMarks), for comparison.
func BenchmarkExcerpt(b *testing.B) {
	ix := &Index{analyzer: textanalysis.NewAnalyzer()}
	var hits []string
	for i := range 10 {
		hits = append(hits, fmt.Sprintf("- The billing service %d keeps its ledger in PostgreSQL and publishes %d reconciled reports to the finance team every %d days", i, i*3, i+2))
	}
	terms := ix.terms(ix.analyzer, "ledger reconciliation finance")
	b.Run("runs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			q := newQueryMarks(terms)
			for _, h := range hits {
				_ = ix.excerpt(h, q)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, h := range hits {
				var marks []span
				for _, t := range ix.analyzer.Analyze([]byte(h)) {
					if terms[string(t.Term)] {
						marks = append(marks, span{t.Start, t.End})
					}
				}
				_ = renderExcerpt(h, marks)
			}
		}
	})
}
