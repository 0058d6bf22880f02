package mdops

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// longDecisions is decisions.md after n decisions and n evicted facts: the
// file every apply of a long-lived agent reads (the 1-hour soak grows it to
// about 180 KB an agent).
func longDecisions(b *testing.B, n int) string {
	b.Helper()
	var md strings.Builder
	md.WriteString("# Decisions: a1\n")
	for i := range n {
		fmt.Fprintf(&md, "\n## 2026-11-%02d — Decision %d: move the gateway to the queue\n**Status:** accepted\n"+
			"**Context:** The pipeline validates the partitions while the worker waits for review.\n"+
			"**Decision:** We agreed that alerts should move to the release before the next release.\n"+
			"**Rationale:** Tables should move to the gateway before the release.\n"+
			"**Consequences:** Keys should move to the release before the next release.\n**Run:** run_%d\n", 1+i%28, i, i)
	}
	md.WriteString("\n## Evicted facts\n")
	for i := range n {
		fmt.Fprintf(&md, "- fact %d about the gateway _(evicted 2026-11-27: over limit)_\n", i)
	}
	return md.String()
}

// BenchmarkParseDecisions: ParseDecisions and CountDecisions on a 180 KB
// decisions.md. Before parseFieldLine (the regexp): see the commit message.
func BenchmarkParseDecisions(b *testing.B) {
	md := longDecisions(b, 400)
	b.Run(fmt.Sprintf("parse/%dKB", len(md)>>10), func(b *testing.B) {
		b.SetBytes(int64(len(md)))
		for b.Loop() {
			ParseDecisions(md)
		}
	})
	b.Run(fmt.Sprintf("count/%dKB", len(md)>>10), func(b *testing.B) {
		b.SetBytes(int64(len(md)))
		for b.Loop() {
			CountDecisions(md)
		}
	})
}

// BenchmarkDecisionEdits: what an apply does to a 180 KB decisions.md — an
// eviction record appended to "Evicted facts", a decision added.
func BenchmarkDecisionEdits(b *testing.B) {
	md := longDecisions(b, 400)
	date := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	b.Run(fmt.Sprintf("evicted/%dKB", len(md)>>10), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			AppendToDecisionsSection(md, "a1", SectionEvictedFacts, []string{"- a fact evicted now _(evicted 2026-11-27: over limit)_"})
		}
	})
	b.Run(fmt.Sprintf("decision/%dKB", len(md)>>10), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := AddDecision(md, "a1", Decision{Title: "Move the queue", Context: "c", Decision: "d", Rationale: "r", Consequences: "q"}, date); err != nil {
				b.Fatal(err)
			}
		}
	})
}
