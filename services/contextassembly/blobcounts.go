package contextassembly

import (
	"crypto/sha1"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/garden-bloom/memory/pkg/lru"
)

// blobCounts remembers token counts by blob hash. A blob hash names a
// file's content, so its count never changes, and an entry is a few dozen
// bytes: it holds the counts of every agent's files where the read cache
// holds the reads of a few thousand. Without it, a read that misses the read
// cache (most reads, once agents outnumber it) counts its files again, and
// counting was a quarter of such a read (issue #9 profile at 10,000 agents).
type blobCounts struct {
	cache *lru.Cache[plumbing.Hash, int]
}

// blobCountCost is the approximate bytes of an entry (key, value, list and
// map overhead).
const blobCountCost = 96

func newBlobCounts(size int64) *blobCounts {
	return &blobCounts{cache: lru.New[plumbing.Hash, int](size)}
}

// counter returns count, except that text which is a whole file of memo is
// counted once per blob.
func (b *blobCounts) counter(memo map[string]memoFile, count func(string) int) func(string) int {
	return func(text string) int {
		for _, f := range memo {
			if len(f.content) != len(text) || f.content != text {
				continue
			}
			if n, ok := b.cache.Get(f.blob); ok {
				return n
			}
			n := count(text)
			b.cache.Put(f.blob, n, blobCountCost)
			return n
		}
		return count(text)
	}
}

// source counts an object-store source once per version: its ETag names
// the version of key as a blob hash names a file's content. An
// AssembleContext counts the agent's sources on every call, and at 10,000
// agents (20,000 sources) the counter has seen few of them.
func (b *blobCounts) source(key, etag, content string, count func(string) int) int {
	if etag == "" {
		return count(content)
	}
	id := plumbing.Hash(sha1.Sum([]byte("source\x00" + key + "\x00" + etag)))
	if n, ok := b.cache.Get(id); ok {
		return n
	}
	n := count(content)
	b.cache.Put(id, n, blobCountCost)
	return n
}
