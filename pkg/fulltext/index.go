// Package fulltext is the BM25 index of the memory monorepo and the
// agents' sources: chunks of Markdown with their file, line span, agent,
// layer, kind and commit, in a persisted bluge index.
//
// The index remembers what it has indexed inside itself — a state document
// with the last indexed commit, and one document per file with its chunk
// count — written in the same batch as the chunks. A batch is atomic, so
// after a crash the index and its idea of where it is never disagree, and a
// restart catches up from there instead of rebuilding.
//
// Rebuilds run into a new generation directory while the current one keeps
// answering; the switch is one atomic rename of the CURRENT file.
package fulltext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blugelabs/bluge"
	"github.com/blugelabs/bluge/analysis"
	"github.com/blugelabs/bluge/index"

	"github.com/garden-bloom/memory/pkg/chunker"
	"github.com/garden-bloom/memory/pkg/textanalysis"
)

// BM25 parameters: the classic defaults (Robertson's, Lucene's). On BEIR
// SciFact they score a little above Anserini's k1=0.9, b=0.4 with our
// analyzer (see docs/design/0001-bluge-bm25-scoring.md, and the figures in
// docs/quality.md).
const (
	BM25K1 = 1.2
	BM25B  = 0.75
)

// Field names.
const (
	fieldBody    = "body" // analyzed: headings + chunk text
	fieldText    = "text" // stored only: the chunk's own text, for excerpts
	fieldPath    = "path"
	fieldAgent   = "agent"
	fieldLayer   = "layer"
	fieldKind    = "kind"
	fieldDocType = "doctype"
	fieldStart   = "start"
	fieldEnd     = "end"
	fieldMeta    = "meta" // stored JSON of file and state documents

	docChunk = "chunk"
	docFile  = "file"
	docState = "state"

	stateID = "_state"
)

// File is one file to index, already split into chunks.
type File struct {
	// Path as shown in results: the repository path, or the object key of a source.
	Path    string
	AgentID string
	// Layer is 1 or 2 for memory files, 0 for logic and sources.
	Layer int
	// Kind is what the file is ("facts", "snapshot", "source", …).
	Kind string
	// Version is the commit (git files) or ETag (sources) the content is from.
	Version string
	Chunks  []chunker.Chunk
}

// fileMeta is the per-file bookkeeping stored in the index.
type fileMeta struct {
	Chunks  int    `json:"chunks"`
	Version string `json:"version"`
	// Sums holds an 8-byte fingerprint of each chunk, in chunk order, and
	// Spans each chunk's line span (uvarints: lines since the previous
	// chunk's end, then length); see chunkids.go.
	Sums  []byte `json:"sums,omitempty"`
	Spans []byte `json:"spans,omitempty"`
}

// State is where the index is.
type State struct {
	// LastCommit is the last memory-repository commit fully indexed.
	LastCommit string    `json:"lastCommit"`
	IndexedAt  time.Time `json:"indexedAt"`
	// Documents and Chunks count indexed files and chunks.
	Documents int `json:"documents"`
	Chunks    int `json:"chunks"`
	// Pass, when set, is a catch-up from LastCommit that stopped part-way
	// (a restart during the first index of a large repository): resuming it
	// skips what it already did.
	Pass *Pass `json:"pass,omitempty"`
}

// Pass is an unfinished catch-up from State.LastCommit to To: every changed
// path up to Done, in sorted order, is indexed as of To.
type Pass struct {
	To   string `json:"to"`
	Done string `json:"done"`
}

// generation is one on-disk index.
type generation struct {
	dir    string
	writer *bluge.Writer
	reader *bluge.Reader
	files  map[string]fileMeta
	state  State
}

// Index is the searchable index with its current generation.
type Index struct {
	base     string
	analyzer *analysis.Analyzer
	// queryAnalyzer analyses a query's optional words (words).
	queryAnalyzer *analysis.Analyzer

	writeMu sync.Mutex // one batch at a time
	// genMu makes Rebuild and RestoreSnapshot take turns: both fill the
	// directory of the next generation.
	genMu sync.Mutex
	mu    sync.RWMutex
	cur   *generation

	// chunkWrites counts chunk documents written (tests check that an
	// append rewrites one chunk, not the file).
	chunkWrites atomic.Int64
}

// Open opens (or creates) the index under base.
func Open(base string) (*Index, error) {
	if err := os.MkdirAll(base, 0o750); err != nil {
		return nil, err
	}
	ix := &Index{base: base, analyzer: textanalysis.NewAnalyzer(), queryAnalyzer: textanalysis.NewQueryAnalyzer()}
	name, err := os.ReadFile(filepath.Join(base, "CURRENT"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		name = []byte("gen-1")
	case err != nil:
		return nil, err
	}
	g, err := ix.openGeneration(filepath.Join(base, strings.TrimSpace(string(name))))
	if err != nil {
		return nil, err
	}
	if err := writeCurrent(base, filepath.Base(g.dir)); err != nil {
		return nil, err
	}
	ix.cur = g
	ix.removeStaleGenerations()
	return ix, nil
}

// OpenMemory returns an index held in memory only, with the same
// analyzer, chunk documents and scoring as one on disk: for a transient
// index (a search of one agent's files as of a past commit). It has no
// generations: Rebuild and snapshots are for indexes on disk.
func OpenMemory() (*Index, error) {
	ix := &Index{analyzer: textanalysis.NewAnalyzer(), queryAnalyzer: textanalysis.NewQueryAnalyzer()}
	g, err := ix.openGeneration("")
	if err != nil {
		return nil, err
	}
	ix.cur = g
	return ix, nil
}

// config is the bluge configuration of a generation in dir ("" = in memory).
func (ix *Index) config(dir string) bluge.Config {
	cfg := bluge.DefaultConfig(dir)
	if dir == "" {
		cfg = bluge.InMemoryOnlyConfig()
	}
	cfg.DefaultSimilarity = bm25{k1: BM25K1, b: BM25B}
	return cfg
}

func (ix *Index) openGeneration(dir string) (*generation, error) {
	w, err := bluge.OpenWriter(ix.config(dir))
	if err != nil {
		return nil, fmt.Errorf("fulltext: open %s: %w", dir, err)
	}
	r, err := w.Reader()
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	g := &generation{dir: dir, writer: w, reader: r, files: map[string]fileMeta{}}
	if err := g.load(context.Background()); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, err
	}
	return g, nil
}

// load reads the state and file documents back from the index.
func (g *generation) load(ctx context.Context) error {
	q := bluge.NewBooleanQuery().AddShould(
		bluge.NewTermQuery(docFile).SetField(fieldDocType),
		bluge.NewTermQuery(docState).SetField(fieldDocType))
	it, err := g.reader.Search(ctx, bluge.NewAllMatches(q))
	if err != nil {
		return err
	}
	for m, err := it.Next(); m != nil || err != nil; m, err = it.Next() {
		if err != nil {
			return err
		}
		var id, doctype string
		var meta []byte
		if err := m.VisitStoredFields(func(field string, value []byte) bool {
			switch field {
			case "_id":
				id = string(value)
			case fieldDocType:
				doctype = string(value)
			case fieldMeta:
				meta = append([]byte(nil), value...)
			}
			return true
		}); err != nil {
			return err
		}
		switch doctype {
		case docState:
			if err := json.Unmarshal(meta, &g.state); err != nil {
				return fmt.Errorf("fulltext: state: %w", err)
			}
		case docFile:
			var fm fileMeta
			if err := json.Unmarshal(meta, &fm); err != nil {
				return fmt.Errorf("fulltext: file %s: %w", id, err)
			}
			g.files[strings.TrimPrefix(id, "file:")] = fm
		}
	}
	return nil
}

func (g *generation) close() {
	_ = g.reader.Close()
	_ = g.writer.Close()
}

// Close closes the index.
func (ix *Index) Close() error {
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.cur != nil {
		ix.cur.close()
		ix.cur = nil
	}
	return nil
}

// State returns where the index is.
func (ix *Index) State() State {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.cur.state
}

// Batch is a set of changes applied atomically with a new state.
type Batch struct {
	Upserts []File
	// Deletes are paths whose chunks leave the index.
	Deletes []string
	// Commit, when set, becomes the state's LastCommit and ends any pass.
	Commit string
	// Pass, when set without Commit, records how far a catch-up got.
	Pass *Pass
}

// Apply writes a batch to the current generation and makes it searchable.
func (ix *Index) Apply(ctx context.Context, b Batch) error {
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	ix.mu.RLock()
	g := ix.cur
	ix.mu.RUnlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	return ix.applyTo(g, b)
}

// applyTo writes b into g and swaps in a reader that sees it, together with
// g's bookkeeping, so a search never pairs a file's version with chunks of
// another. The caller holds writeMu.
func (ix *Index) applyTo(g *generation, b Batch) error {
	batch := index.NewBatch()
	files := make(map[string]fileMeta, len(b.Upserts)+len(b.Deletes))
	for _, f := range b.Upserts {
		old, had := g.files[f.Path]
		fm := ix.upsertFile(batch, old, f)
		meta, _ := json.Marshal(fm)
		doc := bluge.NewDocument("file:" + f.Path).
			AddField(bluge.NewKeywordField(fieldDocType, docFile).StoreValue()).
			AddField(bluge.NewStoredOnlyField(fieldMeta, meta))
		if had {
			batch.Update(doc.ID(), doc)
		} else {
			batch.Insert(doc) // a new file has no document to retire (see upsertFile)
		}
		files[f.Path] = fm
	}
	for _, path := range b.Deletes {
		if _, upserted := files[path]; !upserted { // the upsert replaced its chunks
			ix.deleteFile(batch, g, path)
			files[path] = fileMeta{Chunks: -1}
		}
	}
	next := g.state
	switch {
	case b.Commit != "":
		next.LastCommit, next.Pass = b.Commit, nil
	case b.Pass != nil:
		next.Pass = b.Pass
	}
	next.IndexedAt = time.Now().UTC()
	for path, fm := range files {
		if old, ok := g.files[path]; ok {
			next.Documents--
			next.Chunks -= old.Chunks
		}
		if fm.Chunks >= 0 {
			next.Documents++
			next.Chunks += fm.Chunks
		}
	}
	stateJSON, _ := json.Marshal(next)
	stateDoc := bluge.NewDocument(stateID).
		AddField(bluge.NewKeywordField(fieldDocType, docState).StoreValue()).
		AddField(bluge.NewStoredOnlyField(fieldMeta, stateJSON))
	batch.Update(stateDoc.ID(), stateDoc)

	if err := g.writer.Batch(batch); err != nil {
		return fmt.Errorf("fulltext: batch: %w", err)
	}
	r, err := g.writer.Reader()
	if err != nil {
		return err
	}
	// Readers (State, Files, Search) hold mu; writers also hold writeMu, so
	// reads of g.files above need no lock.
	ix.mu.Lock()
	for path, fm := range files {
		if fm.Chunks < 0 {
			delete(g.files, path)
		} else {
			g.files[path] = fm
		}
	}
	g.state = next
	old := g.reader
	g.reader = r
	ix.mu.Unlock()
	_ = old.Close()
	return nil
}

func (ix *Index) deleteFile(batch *index.Batch, g *generation, path string) {
	fm, ok := g.files[path]
	if !ok {
		return
	}
	for _, id := range fm.ids(path) {
		batch.Delete(bluge.Identifier(id))
	}
	batch.Delete(bluge.Identifier("file:" + path))
}

func (ix *Index) chunkDoc(id string, f File, c chunker.Chunk) *bluge.Document {
	body := c.Text
	if len(c.Headings) > 0 {
		// Headings give a bullet its context (the section it is in, the
		// document title), as Anserini indexes title and text together.
		body = strings.Join(c.Headings, "\n") + "\n" + c.Text
	}
	return bluge.NewDocument(id).
		AddField(bluge.NewKeywordField(fieldDocType, docChunk)).
		AddField(bluge.NewTextField(fieldBody, body).WithAnalyzer(ix.analyzer).SearchTermPositions()).
		AddField(bluge.NewStoredOnlyField(fieldText, []byte(c.Text))).
		AddField(bluge.NewKeywordField(fieldPath, f.Path).StoreValue()).
		AddField(bluge.NewKeywordField(fieldAgent, f.AgentID).StoreValue()).
		AddField(bluge.NewKeywordField(fieldLayer, strconv.Itoa(f.Layer)).StoreValue()).
		AddField(bluge.NewKeywordField(fieldKind, f.Kind).StoreValue())
}

// Files returns the indexed paths with the version each was indexed at.
func (ix *Index) Files() map[string]string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make(map[string]string, len(ix.cur.files))
	for p, fm := range ix.cur.files {
		out[p] = fm.Version
	}
	return out
}

// Builder fills a new generation during a rebuild.
type Builder struct {
	ix *Index
	g  *generation
}

// Apply writes a batch into the generation being built.
func (b *Builder) Apply(_ context.Context, batch Batch) error {
	return b.ix.applyTo(b.g, batch)
}

// Rebuild fills a fresh generation with fill while the current one keeps
// answering searches and taking batches, then switches to it atomically.
// Batches applied to the old generation during the rebuild are not carried
// over: fill's last batch sets LastCommit, and the caller catches up from
// there after Rebuild returns.
func (ix *Index) Rebuild(ctx context.Context, fill func(*Builder) error) error {
	ix.genMu.Lock()
	defer ix.genMu.Unlock()
	dir := ix.nextGeneration()
	_ = os.RemoveAll(dir) // a rebuild that died half-way
	g, err := ix.openGeneration(dir)
	if err != nil {
		return err
	}
	if err := fill(&Builder{ix: ix, g: g}); err != nil {
		g.close()
		_ = os.RemoveAll(dir)
		return err
	}
	if err := ctx.Err(); err != nil {
		g.close()
		_ = os.RemoveAll(dir)
		return err
	}
	if err := ix.switchTo(g); err != nil {
		g.close()
		return err
	}
	return nil
}

// nextGeneration is the directory of the generation after the current one.
func (ix *Index) nextGeneration() string {
	ix.mu.RLock()
	curName := filepath.Base(ix.cur.dir)
	ix.mu.RUnlock()
	n, _ := strconv.Atoi(strings.TrimPrefix(curName, "gen-"))
	return filepath.Join(ix.base, "gen-"+strconv.Itoa(n+1))
}

// switchTo makes g the current generation. CURRENT is written first, so a
// crash before the swap still reopens g; the old generation is closed and
// removed after it. Holding writeMu waits out a batch in flight on the old
// generation, which is about to be closed.
func (ix *Index) switchTo(g *generation) error {
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	if err := writeCurrent(ix.base, filepath.Base(g.dir)); err != nil {
		return err
	}
	ix.mu.Lock()
	old := ix.cur
	ix.cur = g
	ix.mu.Unlock()
	old.close()
	_ = os.RemoveAll(old.dir)
	return nil
}

// writeCurrent points CURRENT at a generation, atomically and durably.
func writeCurrent(base, name string) error {
	tmp := filepath.Join(base, "CURRENT.tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(name + "\n"); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(base, "CURRENT")); err != nil {
		return err
	}
	return syncDir(base)
}

// syncDir makes the entries of dir (a rename, new files) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}

// removeStaleGenerations deletes generation directories CURRENT does not
// name (left by a rebuild interrupted by a crash).
func (ix *Index) removeStaleGenerations() {
	entries, err := os.ReadDir(ix.base)
	if err != nil {
		return
	}
	cur := filepath.Base(ix.cur.dir)
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "gen-") && e.Name() != cur {
			_ = os.RemoveAll(filepath.Join(ix.base, e.Name()))
		}
	}
}
