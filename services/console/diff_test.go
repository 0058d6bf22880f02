package console

import (
	"testing"

	"github.com/stretchr/testify/require"
)

const sampleDiff = `--- a/memory/cur/facts.md
+++ b/memory/cur/facts.md
@@ -2,4 +2,5 @@
 
 ## Technical
-- MinIO has versioning
+- MinIO keeps versions
+- the bucket is mcpstorage
 - the index is BM25
\ No newline at end of file
`

func TestParseUnified(t *testing.T) {
	lines := parseUnified(sampleDiff)
	kinds := ""
	for _, l := range lines {
		kinds += l.Kind[:1]
	}
	require.Equal(t, "mmhccdaacm", kinds, "meta, meta, hunk, ctx, ctx, del, add, add, ctx, meta")
	require.Equal(t, diffLine{Kind: "ctx", Old: 2, New: 2, Text: ""}, lines[3])
	require.Equal(t, diffLine{Kind: "del", Old: 4, Text: "- MinIO has versioning"}, lines[5])
	require.Equal(t, diffLine{Kind: "add", New: 5, Text: "- the bucket is mcpstorage"}, lines[7])
	require.Equal(t, diffLine{Kind: "ctx", Old: 5, New: 6, Text: "- the index is BM25"}, lines[8])

	d := newFileDiff("facts.md", "", sampleDiff)
	require.Equal(t, 2, d.Added)
	require.Equal(t, 1, d.Removed)
	require.Equal(t, "changed", d.Change)
	require.False(t, d.Empty)
}

func TestSplitRowsPairRemovalsWithAdditions(t *testing.T) {
	rows := splitRows(parseUnified(sampleDiff))
	require.Len(t, rows, 6, "hunk, 2 context, 2 changed pairs, 1 context")
	require.NotEmpty(t, rows[0].Hunk)
	pair := rows[3]
	require.Equal(t, "- MinIO has versioning", pair.Left.Text)
	require.Equal(t, "- MinIO keeps versions", pair.Right.Text)
	require.Nil(t, rows[4].Left, "an addition with nothing removed beside it")
	require.Equal(t, "- the bucket is mcpstorage", rows[4].Right.Text)
}

func TestChangeOf(t *testing.T) {
	require.Equal(t, "added", changeOf("--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a\n"))
	require.Equal(t, "removed", changeOf("--- a/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"))
	require.True(t, newFileDiff("x", "changed", "").Empty)
}
