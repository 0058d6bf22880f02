package fulltext

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/blugelabs/bluge"
	"github.com/blugelabs/bluge/index"

	"github.com/garden-bloom/memory/pkg/chunker"
)

// A chunk's document id is its file's path and a fingerprint of what the
// chunk indexes (text, headings, agent, layer, kind): path#<16 hex digits>,
// with ".k" appended for the k-th repeat of the same chunk in one file. So a
// new version of a file writes only chunks that are new and deletes only
// chunks that are gone, wherever in the file the edit was: an appended fact,
// a changelog entry put first, a paragraph inserted in the middle are one
// new document each. Line spans shift with such edits, so they are not in
// the documents but in the file's bookkeeping (fileMeta.Spans).
//
// Indexes written before content ids kept the span in every chunk and named
// chunks path#0..n-1 by position; fileMeta.positional tells such files
// apart, and the next change of one replaces its chunks whole.

// sumSize is the size of one chunk fingerprint in fileMeta.Sums.
const sumSize = 8

// chunkSum fingerprints what chunkDoc indexes and stores. SHA-256 rather
// than a cheaper non-cryptographic hash: agents write this text, and a
// crafted collision would keep a changed chunk's old text in the index.
// The fields are length-prefixed into buf (reused by the caller: a file's
// chunks were hashed with an allocation per field) and hashed at once.
func chunkSum(buf []byte, f File, c chunker.Chunk) ([sumSize]byte, []byte) {
	buf = buf[:0]
	field := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	number := func(n int) {
		var digits [20]byte
		d := strconv.AppendInt(digits[:0], int64(n), 10)
		buf = binary.AppendUvarint(buf, uint64(len(d)))
		buf = append(buf, d...)
	}
	field(f.AgentID)
	number(f.Layer)
	field(f.Kind)
	number(len(c.Headings))
	for _, hd := range c.Headings {
		field(hd)
	}
	field(c.Text)
	sum := sha256.Sum256(buf)
	return [sumSize]byte(sum[:sumSize]), buf
}

// newFileMeta is the bookkeeping of f: its chunks' fingerprints and spans.
func newFileMeta(f File) fileMeta {
	fm := fileMeta{Chunks: len(f.Chunks), Version: f.Version,
		Sums: make([]byte, 0, len(f.Chunks)*sumSize), Spans: make([]byte, 0, len(f.Chunks)*2)}
	prevEnd := 0
	var buf []byte
	for _, c := range f.Chunks {
		var sum [sumSize]byte
		sum, buf = chunkSum(buf, f, c)
		fm.Sums = append(fm.Sums, sum[:]...)
		// Spans are ascending and do not overlap: the gap since the last
		// chunk and the length fit in a byte or two each.
		fm.Spans = binary.AppendUvarint(fm.Spans, uint64(c.StartLine-prevEnd))
		fm.Spans = binary.AppendUvarint(fm.Spans, uint64(c.EndLine-c.StartLine))
		prevEnd = c.EndLine
	}
	return fm
}

// positional reports whether fm's chunks have position ids (path#i) and
// their spans inside them, as indexes before content ids wrote them.
func (fm fileMeta) positional() bool { return fm.Chunks > 0 && fm.Spans == nil }

// chunkKey is a content-id chunk's identity within its file: its
// fingerprint, and which repeat of that chunk in the file it is.
type chunkKey struct {
	sum [sumSize]byte
	dup int
}

// keys returns the keys of fm's chunks, in chunk order; fm must not be
// positional.
func (fm fileMeta) keys() []chunkKey {
	out := make([]chunkKey, fm.Chunks)
	seen := make(map[[sumSize]byte]int, fm.Chunks)
	for i := range out {
		sum := [sumSize]byte(fm.Sums[i*sumSize : (i+1)*sumSize])
		out[i] = chunkKey{sum, seen[sum]}
		seen[sum]++
	}
	return out
}

// chunkID is the document id of the chunk k of the file at path.
func chunkID(path string, k chunkKey) string {
	id := path + "#" + hex.EncodeToString(k.sum[:])
	if k.dup > 0 {
		id += "." + strconv.Itoa(k.dup)
	}
	return id
}

// ids returns the document ids of fm's chunks, in chunk order.
func (fm fileMeta) ids(path string) []string {
	out := make([]string, fm.Chunks)
	if fm.positional() {
		for i := range out {
			out[i] = path + "#" + strconv.Itoa(i)
		}
		return out
	}
	for i, k := range fm.keys() {
		out[i] = chunkID(path, k)
	}
	return out
}

// span returns the line span of the chunk with document id id, or false if
// fm does not list it (positional files, whose chunks carry their spans).
func (fm fileMeta) span(path, id string) (start, end int, ok bool) {
	if fm.positional() {
		return 0, 0, false
	}
	want, dup, _ := strings.Cut(strings.TrimPrefix(id, path+"#"), ".")
	k := 0
	if dup != "" {
		k, _ = strconv.Atoi(dup)
	}
	sum, err := hex.DecodeString(want)
	if err != nil || len(sum) != sumSize {
		return 0, 0, false
	}
	spans := fm.Spans
	prevEnd := 0
	for i := range fm.Chunks {
		gap, n := binary.Uvarint(spans)
		length, m := binary.Uvarint(spans[max(n, 0):])
		if n <= 0 || m <= 0 {
			return 0, 0, false
		}
		spans = spans[n+m:]
		start, end = prevEnd+int(gap), prevEnd+int(gap)+int(length)
		prevEnd = end
		if string(fm.Sums[i*sumSize:(i+1)*sumSize]) == string(sum) {
			if k == 0 {
				return start, end, true
			}
			k--
		}
	}
	return 0, 0, false
}

// upsertFile puts f's chunks into batch against what old has indexed and
// returns f's new bookkeeping. No id is both deleted and updated.
func (ix *Index) upsertFile(batch *index.Batch, old fileMeta, f File) fileMeta {
	fm := newFileMeta(f)
	// Compared by key, not id: most of a file's chunks are unchanged, and
	// only those written or deleted need their id spelt out.
	var oldKeys []chunkKey
	kept := map[chunkKey]bool{} // positional chunks are never kept
	if !old.positional() {
		oldKeys = old.keys()
		for _, k := range oldKeys {
			kept[k] = true
		}
	}
	newKeys := fm.keys()
	wanted := make(map[chunkKey]bool, len(newKeys))
	for i, k := range newKeys {
		wanted[k] = true
		if kept[k] {
			continue // the same chunk is indexed already
		}
		// An id the file did not have is in no segment (ids start with
		// the path, and the file's bookkeeping lists all of them), so it
		// is inserted: an update would look it up in every segment to
		// retire the old copy, which on a first pass is most segments.
		batch.Insert(ix.chunkDoc(chunkID(f.Path, k), f, f.Chunks[i]))
		ix.chunkWrites.Add(1)
	}
	if old.positional() {
		for _, id := range old.ids(f.Path) {
			batch.Delete(bluge.Identifier(id))
		}
	}
	for _, k := range oldKeys {
		if !wanted[k] {
			batch.Delete(bluge.Identifier(chunkID(f.Path, k)))
		}
	}
	return fm
}
