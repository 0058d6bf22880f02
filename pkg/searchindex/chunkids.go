package searchindex

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
func chunkSum(f File, c chunker.Chunk) [sumSize]byte {
	h := sha256.New()
	field := func(s string) {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	field(f.AgentID)
	field(strconv.Itoa(f.Layer))
	field(f.Kind)
	field(strconv.Itoa(len(c.Headings)))
	for _, hd := range c.Headings {
		field(hd)
	}
	field(c.Text)
	var out [sumSize]byte
	copy(out[:], h.Sum(nil))
	return out
}

// newFileMeta is the bookkeeping of f: its chunks' fingerprints and spans.
func newFileMeta(f File) fileMeta {
	fm := fileMeta{Chunks: len(f.Chunks), Version: f.Version,
		Sums: make([]byte, 0, len(f.Chunks)*sumSize), Spans: make([]byte, 0, len(f.Chunks)*2)}
	prevEnd := 0
	for _, c := range f.Chunks {
		sum := chunkSum(f, c)
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

// ids returns the document ids of fm's chunks, in chunk order.
func (fm fileMeta) ids(path string) []string {
	out := make([]string, fm.Chunks)
	if fm.positional() {
		for i := range out {
			out[i] = path + "#" + strconv.Itoa(i)
		}
		return out
	}
	seen := make(map[string]int, fm.Chunks)
	for i := range out {
		id := path + "#" + hex.EncodeToString(fm.Sums[i*sumSize:(i+1)*sumSize])
		if k := seen[id]; k > 0 {
			out[i] = id + "." + strconv.Itoa(k)
		} else {
			out[i] = id
		}
		seen[id]++
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
	oldIDs := old.ids(f.Path)
	var kept map[string]bool // positional chunks are never kept
	if !old.positional() {
		kept = make(map[string]bool, len(oldIDs))
		for _, id := range oldIDs {
			kept[id] = true
		}
	}
	newIDs := fm.ids(f.Path)
	wanted := make(map[string]bool, len(newIDs))
	for i, id := range newIDs {
		wanted[id] = true
		if kept[id] {
			continue // the same chunk is indexed already
		}
		// An id the file did not have is in no segment (ids start with
		// the path, and the file's bookkeeping lists all of them), so it
		// is inserted: an update would look it up in every segment to
		// retire the old copy, which on a first pass is most segments.
		batch.Insert(ix.chunkDoc(id, f, f.Chunks[i]))
		ix.chunkWrites.Add(1)
	}
	for _, id := range oldIDs {
		if !wanted[id] {
			batch.Delete(bluge.Identifier(id))
		}
	}
	return fm
}
