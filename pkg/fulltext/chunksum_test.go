package fulltext

import (
	"testing"

	"github.com/garden-bloom/memory/pkg/chunker"
)

// TestChunkIDsStable pins the chunk fingerprint: ids are persisted in the
// index, and a changed fingerprint would re-index every chunk of every file
// on the next change after an upgrade.
func TestChunkIDsStable(t *testing.T) {
	f := File{Path: "memory/ops-bot/facts.md", AgentID: "ops-bot", Layer: 1, Kind: "facts",
		Chunks: []chunker.Chunk{
			{Text: "- The deploy window is Tuesday", Headings: []string{"Facts", "Release"}},
			{Text: "- The deploy window is Tuesday", Headings: []string{"Facts", "Release"}},
			{Text: "Plain paragraph, no headings."},
		}}
	got := newFileMeta(f).ids(f.Path)
	want := []string{
		"memory/ops-bot/facts.md#e96eb175ef465cd2",
		"memory/ops-bot/facts.md#e96eb175ef465cd2.1",
		"memory/ops-bot/facts.md#d724058498ecb372",
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("chunk %d id = %s, want %s", i, got[i], want[i])
		}
	}
}
