package contextassembly

import (
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/garden-bloom/memory/pkg/lru"
)

// blobCounts remembers token counts by what names a content: a file's blob
// hash, or an object-store source's key and ETag. Such a count never
// changes, and an entry is a few dozen bytes: it holds the counts of every
// agent's files where the read cache holds the reads of a few thousand.
// Without it, a read that misses the read cache (most reads, once agents
// outnumber it) tokenizes its files again, although their counts cannot
// have changed (issue #9).
type blobCounts struct {
	cache *lru.Cache[contentKey, int]
}

// contentKey names a content: blob for a file of the repository, source and
// etag for an object-store source.
type contentKey struct {
	blob         plumbing.Hash
	source, etag string
}

// contentEntryCost is the approximate bytes of an entry (key, value, list and
// map overhead), besides a source key's strings.
const contentEntryCost = 128

func newBlobCounts(size int64) *blobCounts {
	return &blobCounts{cache: lru.New[contentKey, int](size)}
}

// get returns the count of the content named k, counting text once.
func (b *blobCounts) get(k contentKey, text string, count func(string) int) int {
	if n, ok := b.cache.Get(k); ok {
		return n
	}
	n := count(text)
	b.cache.Put(k, n, contentEntryCost+int64(len(k.source)+len(k.etag)))
	return n
}

// counter returns count, except that text which is a whole file of memo is
// counted once per blob.
func (b *blobCounts) counter(memo map[string]memoFile, count func(string) int) func(string) int {
	return func(text string) int {
		for _, f := range memo {
			if len(f.content) == len(text) && f.content == text {
				return b.get(contentKey{blob: f.blob}, text, count)
			}
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
	return b.get(contentKey{source: key, etag: etag}, content, count)
}
