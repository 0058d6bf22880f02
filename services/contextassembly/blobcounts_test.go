package contextassembly

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

func TestBlobCountsCountEachBlobOnce(t *testing.T) {
	calls := 0
	count := func(s string) int { calls++; return len(s) } // stands in for the tokenizer
	b := newBlobCounts(1 << 20)
	blob := func(s string) plumbing.Hash { return plumbing.ComputeHash(plumbing.BlobObject, []byte(s)) }
	snap, loops := "# Snapshot\n\nwork\n", "# Open Loops\n"
	memo := map[string]memoFile{"snapshot.md": {snap, blob(snap)}, "open_loops.md": {loops, blob(loops)}}

	c := b.counter(memo, count)
	require.Equal(t, len(snap), c(snap))
	require.Equal(t, len(loops), c(loops))
	require.Equal(t, 2, calls)
	// Another request over the same blobs counts nothing again.
	again := b.counter(map[string]memoFile{"snapshot.md": {snap, blob(snap)}}, count)
	require.Equal(t, len(snap), again(snap))
	require.Equal(t, 2, calls)
	// Text that is not a whole file of the request (a cut, a rendering) is
	// counted every time; so is a file of a request without a memo.
	require.Equal(t, 6, c(snap[:6]))
	require.Equal(t, 6, c(snap[:6]))
	require.Equal(t, len(snap), b.counter(nil, count)(snap))
	require.Equal(t, 5, calls)
	// A changed file is a new blob: counted afresh, not given the old count.
	edited := snap + "more\n"
	require.Equal(t, len(edited), b.counter(map[string]memoFile{"snapshot.md": {edited, blob(edited)}}, count)(edited))
	require.Equal(t, 6, calls)
}

func TestSourceCountsByVersion(t *testing.T) {
	calls := 0
	count := func(s string) int { calls++; return len(s) }
	b := newBlobCounts(1 << 20)
	key := "agents/a/sources/guide.md"
	require.Equal(t, 5, b.source(key, "etag-1", "hello", count))
	require.Equal(t, 5, b.source(key, "etag-1", "hello", count))
	require.Equal(t, 1, calls)
	// A new version (ETag) or another key is counted afresh.
	require.Equal(t, 6, b.source(key, "etag-2", "hello!", count))
	require.Equal(t, 5, b.source("agents/b/sources/guide.md", "etag-1", "howdy", count))
	// Without an ETag nothing names the version: counted every time.
	require.Equal(t, 3, b.source(key, "", "hey", count))
	require.Equal(t, 3, b.source(key, "", "hey", count))
	require.Equal(t, 5, calls)
}
