package fulltext

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/blugelabs/bluge"
	"github.com/blugelabs/bluge/index"
	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/chunker"
)

func file(path, agent string, layer int, kind, version, md string) File {
	return File{Path: path, AgentID: agent, Layer: layer, Kind: kind, Version: version, Chunks: chunker.Split(md, chunker.Options{})}
}

func paths(r *Result) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.Path)
	}
	return out
}

// seededIndex opens an index under base, closed when the test ends, with
// seed's files in it.
func seededIndex(t *testing.T, base string) *Index {
	t.Helper()
	ix, err := Open(base)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ix.Close() })
	seed(t, ix)
	return ix
}

func seed(t *testing.T, ix *Index) {
	t.Helper()
	require.NoError(t, ix.Apply(context.Background(), Batch{Commit: "c1", Upserts: []File{
		file("memory/cur/facts.md", "cur", 1, "facts", "c1", "# Facts: cur\n\n## Storage\n- MinIO bucket mcpstorage has versioning enabled\n- Backups run nightly\n"),
		file("memory/cur/decisions.md", "cur", 2, "decisions", "c1", "# Decisions: cur\n\n## 2026-02-17 — Use MinIO for snapshots\n**Status:** accepted\n**Rationale:** versioning protects snapshots\n"),
		file("memory/ops/facts.md", "ops", 1, "facts", "c1", "# Facts: ops\n\n## Infra\n- The MinIO cluster runs in three zones\n"),
		file("agents/cur/sources/guide.md", "cur", 0, "source", "etag1", "# Guide\n\nVersioning keeps every version of an object.\n"),
	}}))
}

func TestSearchFiltersAndLayers(t *testing.T) {
	ix := seededIndex(t, t.TempDir())

	res, err := ix.Search(context.Background(), Query{Text: "minio versioning"})
	require.NoError(t, err)
	require.NotContains(t, paths(res), "memory/cur/decisions.md", "Layer 2 never appears unasked")
	require.Equal(t, "memory/cur/facts.md", res.Hits[0].Path)
	require.Equal(t, 1, res.Hits[0].Layer)
	require.Equal(t, "cur", res.Hits[0].AgentID)
	require.Equal(t, 4, res.Hits[0].StartLine)
	require.Equal(t, "c1", res.Hits[0].Version)
	require.Contains(t, res.Hits[0].Excerpt, "«MinIO»")
	require.Contains(t, res.Hits[0].Excerpt, "«versioning»")
	require.Equal(t, "c1", res.State.LastCommit)

	// Without excerpts a search finds the same hits, spans and scores.
	bare, err := ix.Search(context.Background(), Query{Text: "minio versioning", OmitExcerpts: true})
	require.NoError(t, err)
	require.Len(t, bare.Hits, len(res.Hits))
	for i, h := range bare.Hits {
		require.Empty(t, h.Excerpt)
		h.Excerpt = res.Hits[i].Excerpt
		require.Equal(t, res.Hits[i], h)
	}

	res, err = ix.Search(context.Background(), Query{Text: "minio versioning", Layer: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"memory/cur/decisions.md"}, paths(res))

	res, err = ix.Search(context.Background(), Query{Text: "minio", AgentID: "ops"})
	require.NoError(t, err)
	require.Equal(t, []string{"memory/ops/facts.md"}, paths(res))

	res, err = ix.Search(context.Background(), Query{Text: "versioning", Kinds: []string{"source"}})
	require.NoError(t, err)
	require.Equal(t, []string{"agents/cur/sources/guide.md"}, paths(res))

	res, err = ix.Search(context.Background(), Query{Text: "minio", PathPrefix: "memory/ops/"})
	require.NoError(t, err)
	require.Equal(t, []string{"memory/ops/facts.md"}, paths(res))

	_, err = ix.Search(context.Background(), Query{Text: "the of and"})
	require.ErrorIs(t, err, ErrEmptyQuery)
}

func TestFiltersDoNotChangeRanking(t *testing.T) {
	ix := seededIndex(t, t.TempDir())
	all, err := ix.Search(context.Background(), Query{Text: "minio zones"})
	require.NoError(t, err)
	only, err := ix.Search(context.Background(), Query{Text: "minio zones", AgentID: "ops"})
	require.NoError(t, err)
	for _, h := range all.Hits {
		if h.AgentID == "ops" {
			require.InDelta(t, h.Score, only.Hits[0].Score, 1e-9)
		}
	}
}

func TestPhrases(t *testing.T) {
	ix, err := Open(t.TempDir())
	require.NoError(t, err)
	defer func() { require.NoError(t, ix.Close()) }()
	require.NoError(t, ix.Apply(context.Background(), Batch{Upserts: []File{
		file("memory/a/facts.md", "a", 1, "facts", "c", "# F\n\n## D\n- backups run nightly in zone one\n- one zone runs nightly backups\n"),
	}}))
	res, err := ix.Search(context.Background(), Query{Text: `"backups run nightly"`})
	require.NoError(t, err)
	require.Len(t, res.Hits, 1)
	require.Equal(t, 4, res.Hits[0].StartLine)
	res, err = ix.Search(context.Background(), Query{Text: `backups nightly`})
	require.NoError(t, err)
	require.Len(t, res.Hits, 2)
}

func TestIncrementalUpdatesAndRestart(t *testing.T) {
	dir := t.TempDir()
	ix, err := Open(dir)
	require.NoError(t, err)
	seed(t, ix)
	// Change: the file shrinks from two chunks to one; delete another file.
	require.NoError(t, ix.Apply(context.Background(), Batch{Commit: "c2",
		Upserts: []File{file("memory/cur/facts.md", "cur", 1, "facts", "c2", "# Facts: cur\n\n## Storage\n- Snapshots go to tape\n")},
		Deletes: []string{"memory/ops/facts.md"}}))
	res, err := ix.Search(context.Background(), Query{Text: "minio"})
	require.NoError(t, err)
	require.Empty(t, paths(res), "old chunks and deleted files are gone")
	res, err = ix.Search(context.Background(), Query{Text: "backups nightly"})
	require.NoError(t, err)
	require.Empty(t, res.Hits, "the second chunk of the old version is gone")
	st := ix.State()
	require.Equal(t, "c2", st.LastCommit)
	require.Equal(t, 3, st.Documents)
	require.NoError(t, ix.Close())

	// Restart: state and per-file bookkeeping come back from the index.
	ix, err = Open(dir)
	require.NoError(t, err)
	defer func() { require.NoError(t, ix.Close()) }()
	require.Equal(t, "c2", ix.State().LastCommit)
	require.Equal(t, map[string]string{"memory/cur/facts.md": "c2", "memory/cur/decisions.md": "c1", "agents/cur/sources/guide.md": "etag1"}, ix.Files())
	res, err = ix.Search(context.Background(), Query{Text: "tape"})
	require.NoError(t, err)
	require.Equal(t, []string{"memory/cur/facts.md"}, paths(res))
}

func TestRebuildWhileSearching(t *testing.T) {
	dir := t.TempDir()
	ix := seededIndex(t, dir)
	stop := keepUsing(ix, false)
	err := ix.Rebuild(context.Background(), func(b *Builder) error {
		for i := range 50 {
			if err := b.Apply(context.Background(), Batch{Upserts: []File{
				file(fmt.Sprintf("memory/a%d/facts.md", i), fmt.Sprintf("a%d", i), 1, "facts", "c9", "# F\n\n## D\n- minio fact\n")}}); err != nil {
				return err
			}
		}
		return b.Apply(context.Background(), Batch{Commit: "c9"})
	})
	require.NoError(t, err)
	require.Zero(t, stop(), "searches keep answering during a rebuild")
	require.Equal(t, "c9", ix.State().LastCommit)
	require.Equal(t, 50, ix.State().Documents)
	gens, err := filepath.Glob(filepath.Join(dir, "gen-*"))
	require.NoError(t, err)
	require.Len(t, gens, 1, "the old generation is removed")
	require.True(t, strings.HasSuffix(gens[0], "gen-2"))
}

// keepUsing searches ix for the seeded "minio" over and over (with apply,
// also applies empty batches) until the returned stop, which says how many
// calls failed or found nothing.
func keepUsing(ix *Index, apply bool) (stop func() int64) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var failures atomic.Int64
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if res, err := ix.Search(context.Background(), Query{Text: "minio"}); err != nil || len(res.Hits) == 0 {
				failures.Add(1)
			}
			if apply {
				if err := ix.Apply(context.Background(), Batch{}); err != nil {
					failures.Add(1)
				}
			}
		}
	})
	return func() int64 {
		close(done)
		wg.Wait()
		return failures.Load()
	}
}

func TestExcerptWindowAndMarks(t *testing.T) {
	ix, err := Open(t.TempDir())
	require.NoError(t, err)
	defer func() { require.NoError(t, ix.Close()) }()
	long := strings.Repeat("filler words here ", 40) + "the Ключове рішення about storage " + strings.Repeat("more filler ", 40)
	ex := ix.excerpt(long, newQueryMarks(ix.terms(ix.analyzer, "storage")))
	require.Contains(t, ex, "«storage»")
	require.True(t, strings.HasPrefix(ex, "…"))
	require.True(t, strings.HasSuffix(ex, "…"))
	require.Less(t, len(ex), 400)
}

// storedChunks returns every chunk document's stored fields by id.
func storedChunks(t *testing.T, ix *Index) map[string]map[string]string {
	t.Helper()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	it, err := ix.cur.reader.Search(context.Background(), bluge.NewAllMatches(bluge.NewTermQuery(docChunk).SetField(fieldDocType)))
	require.NoError(t, err)
	out := map[string]map[string]string{}
	for m, err := it.Next(); m != nil || err != nil; m, err = it.Next() {
		require.NoError(t, err)
		fields := map[string]string{}
		require.NoError(t, m.VisitStoredFields(func(field string, value []byte) bool {
			fields[field] = string(value)
			return true
		}))
		require.NotContains(t, out, fields["_id"], "one document per chunk id")
		out[fields["_id"]] = fields
	}
	// And one file document per file.
	files, err := ix.cur.reader.Search(context.Background(), bluge.NewAllMatches(bluge.NewTermQuery(docFile).SetField(fieldDocType)))
	require.NoError(t, err)
	seen := map[string]bool{}
	for m, err := files.Next(); m != nil || err != nil; m, err = files.Next() {
		require.NoError(t, err)
		require.NoError(t, m.VisitStoredFields(func(field string, value []byte) bool {
			if field == "_id" {
				require.False(t, seen[string(value)], "one document per file: %s", value)
				seen[string(value)] = true
			}
			return true
		}))
	}
	require.Len(t, seen, len(ix.cur.files))
	return out
}

// A new version of a file rewrites only the chunks that changed, and the
// index ends up exactly as if the final version had been indexed afresh.
func TestUpdatesRewriteOnlyChangedChunks(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = ix.Close() })

	const path = "memory/cur/facts.md"
	lines := []string{"# Facts: cur", "", "## Storage"}
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("- storage fact %d about buckets", i))
	}
	doc := func() string { return strings.Join(lines, "\n") + "\n" }
	require.NoError(t, ix.Apply(ctx, Batch{Commit: "c0", Upserts: []File{file(path, "cur", 1, "facts", "c0", doc())}}))

	before := ix.chunkWrites.Load()
	lines = append(lines, "- storage fact appended later")
	require.NoError(t, ix.Apply(ctx, Batch{Commit: "c1", Upserts: []File{file(path, "cur", 1, "facts", "c1", doc())}}))
	require.Equal(t, int64(1), ix.chunkWrites.Load()-before, "an appended bullet is one new chunk")

	res, err := ix.Search(ctx, Query{Text: "\"storage fact 3\"", AgentID: "cur"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Hits)
	require.Equal(t, "c1", res.Hits[0].Version, "an unchanged chunk reports the file's new version")

	// A bullet put first or in the middle shifts every later span but
	// changes no other chunk.
	for _, at := range []int{3, 20} {
		before = ix.chunkWrites.Load()
		lines = slices.Insert(lines, at, fmt.Sprintf("- storage fact inserted at line %d", at+1))
		require.NoError(t, ix.Apply(ctx, Batch{Commit: "c2", Upserts: []File{file(path, "cur", 1, "facts", "c2", doc())}}))
		require.Equal(t, int64(1), ix.chunkWrites.Load()-before)
	}
	res, err = ix.Search(ctx, Query{Text: "\"storage fact 30\"", AgentID: "cur"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Hits)
	require.Equal(t, "- storage fact 30 about buckets", lines[res.Hits[0].StartLine-1], "spans follow the shifted lines")
	require.Equal(t, res.Hits[0].StartLine, res.Hits[0].EndLine)

	r := rand.New(rand.NewPCG(7, 9))
	for step := range 60 {
		switch op := r.IntN(5); {
		case op == 0 && len(lines) > 4: // delete a line
			i := 3 + r.IntN(len(lines)-3)
			lines = append(lines[:i:i], lines[i+1:]...)
		case op == 1: // insert a bullet
			i := 3 + r.IntN(len(lines)-2)
			lines = slices.Insert(lines, i, fmt.Sprintf("- inserted fact %d", step))
		case op == 2: // a new section
			lines = append(lines, "", fmt.Sprintf("## Section %d", step), fmt.Sprintf("- fact under section %d", step))
		case op == 3 && len(lines) > 4: // edit a line in place, or repeat one
			i := 3 + r.IntN(len(lines)-3)
			lines[i] = fmt.Sprintf("- edited fact %d", step)
			if step%2 == 0 {
				lines[i] = lines[3+r.IntN(len(lines)-3)]
			}
		default:
			lines = append(lines, fmt.Sprintf("- appended fact %d", step))
		}
		version := fmt.Sprintf("v%d", step)
		require.NoError(t, ix.Apply(ctx, Batch{Commit: version, Upserts: []File{file(path, "cur", 1, "facts", version, doc())}}))

		fresh, err := Open(t.TempDir())
		require.NoError(t, err)
		require.NoError(t, fresh.Apply(ctx, Batch{Commit: version, Upserts: []File{file(path, "cur", 1, "facts", version, doc())}}))
		require.Equal(t, storedChunks(t, fresh), storedChunks(t, ix), "step %d", step)
		require.Equal(t, fresh.cur.files, ix.cur.files, "step %d: fingerprints and spans", step)
		require.Equal(t, fresh.State().Chunks, ix.State().Chunks)
		require.Equal(t, fresh.State().Documents, ix.State().Documents)
		require.NoError(t, fresh.Close())
	}

	// Repeated chunks are documents of their own.
	lines = append(lines, "- a repeated fact", "- a repeated fact")
	require.NoError(t, ix.Apply(ctx, Batch{Commit: "dup", Upserts: []File{file(path, "cur", 1, "facts", "dup", doc())}}))
	repeats := 0
	for _, fields := range storedChunks(t, ix) {
		if fields[fieldText] == "- a repeated fact" {
			repeats++
		}
	}
	require.GreaterOrEqual(t, repeats, 2)

	// A path both deleted and upserted in one batch ends up upserted, and
	// deleting it removes every chunk.
	require.NoError(t, ix.Apply(ctx, Batch{Commit: "both", Upserts: []File{file(path, "cur", 1, "facts", "both", doc())}, Deletes: []string{path}}))
	require.Len(t, storedChunks(t, ix), ix.State().Chunks)
	require.Equal(t, 1, ix.State().Documents)
	require.NoError(t, ix.Apply(ctx, Batch{Commit: "gone", Deletes: []string{path}}))
	require.Empty(t, storedChunks(t, ix))
	require.Equal(t, State{LastCommit: "gone"}, State{LastCommit: ix.State().LastCommit, Documents: ix.State().Documents, Chunks: ix.State().Chunks})
	require.NoError(t, ix.Apply(ctx, Batch{Commit: "back", Upserts: []File{file(path, "cur", 1, "facts", "back", doc())}}))

	// After a restart the fingerprints are read back, so an append is
	// still one chunk.
	dir := ix.base
	require.NoError(t, ix.Close())
	ix, err = Open(dir)
	require.NoError(t, err)
	before = ix.chunkWrites.Load()
	lines = append(lines, "- appended after the restart")
	require.NoError(t, ix.Apply(ctx, Batch{Commit: "last", Upserts: []File{file(path, "cur", 1, "facts", "last", doc())}}))
	require.Equal(t, int64(1), ix.chunkWrites.Load()-before)
}

// An index written before content ids named chunks by position and kept
// spans in them; it still answers, and a file's next version replaces its
// chunks as a fresh index would have them.
func TestPositionalChunksAreReplaced(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ix, err := Open(dir)
	require.NoError(t, err)
	const path = "memory/cur/facts.md"
	md := "# Facts: cur\n\n## Storage\n- MinIO bucket mcpstorage has versioning enabled\n- Backups run nightly\n"
	f := file(path, "cur", 1, "facts", "c1", md)
	batch := index.NewBatch()
	for i, c := range f.Chunks { // as chunkDoc wrote them before content ids
		doc := ix.chunkDoc(path+"#"+strconv.Itoa(i), f, c).
			AddField(bluge.NewStoredOnlyField(fieldStart, []byte(strconv.Itoa(c.StartLine)))).
			AddField(bluge.NewStoredOnlyField(fieldEnd, []byte(strconv.Itoa(c.EndLine)))).
			AddField(bluge.NewStoredOnlyField("commit", []byte("c1")))
		batch.Update(doc.ID(), doc)
	}
	meta, err := json.Marshal(map[string]any{"chunks": len(f.Chunks), "version": "c1"})
	require.NoError(t, err)
	fileDoc := bluge.NewDocument("file:" + path).
		AddField(bluge.NewKeywordField(fieldDocType, docFile).StoreValue()).
		AddField(bluge.NewStoredOnlyField(fieldMeta, meta))
	batch.Update(fileDoc.ID(), fileDoc)
	require.NoError(t, ix.cur.writer.Batch(batch))
	require.NoError(t, ix.Close())

	ix, err = Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ix.Close() })
	require.True(t, ix.cur.files[path].positional())
	res, err := ix.Search(ctx, Query{Text: "backups nightly"})
	require.NoError(t, err)
	require.Len(t, res.Hits, 1)
	require.Equal(t, []int{5, 5}, []int{res.Hits[0].StartLine, res.Hits[0].EndLine})
	require.Equal(t, "c1", res.Hits[0].Version)

	next := file(path, "cur", 1, "facts", "c2", md+"- Restores are tested monthly\n")
	require.NoError(t, ix.Apply(ctx, Batch{Commit: "c2", Upserts: []File{next}}))
	fresh, err := Open(t.TempDir())
	require.NoError(t, err)
	defer func() { require.NoError(t, fresh.Close()) }()
	require.NoError(t, fresh.Apply(ctx, Batch{Commit: "c2", Upserts: []File{next}}))
	require.Equal(t, storedChunks(t, fresh), storedChunks(t, ix))
	require.Equal(t, fresh.cur.files, ix.cur.files)
}

// Excerpts analysed a prefix and a run at a time, skipping runs, are
// exactly the excerpts of the whole text analysed at once, whatever the
// text and wherever the matches.
func TestExcerptOfPrefixesMatchesWholeText(t *testing.T) {
	ix, err := Open(t.TempDir())
	require.NoError(t, err)
	defer func() { require.NoError(t, ix.Close()) }()
	words := []string{"storage", "Storage's", "stored", "filler", "words", "Ключове", "рішення", "пам`ять",
		"don't", "v1.2", "2026-02-17", "naïve", "a\u0308b", "—", "(storage)", "run_abc123", "THE", "x",
		"possibility", "Possibly", "relational", "happy", "HAPPIEST", "hopping", "hop", "ies", "is", "AI's", "ai",
		"organization's", "Organize", "\u0301storage", "́", "`", "´", "\u200dstore", "e\u0301", "ёлка", "Ёлки", "x2"}
	seps := []string{" ", " ", " ", "\n", "  ", "\t", ", ", ".\n\n", "-", "", "\r\n", "\v", "\f", "\u00a0", "\u3000", "'", "`"}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		var b strings.Builder
		for range rng.IntN(1200) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		text := b.String()
		terms := ix.terms(ix.analyzer, words[rng.IntN(len(words))]+" "+words[rng.IntN(len(words))])
		var whole []span
		for _, tok := range ix.analyzer.Analyze([]byte(text)) {
			if terms[string(tok.Term)] {
				whole = append(whole, span{tok.Start, tok.End})
			}
		}
		q := newQueryMarks(terms)
		require.Equal(t, whole, ix.marksIn(text, q), "text %d: %q", i, text)
		require.Equal(t, renderExcerpt(text, whole), ix.excerpt(text, q), "text %d: %q", i, text)
	}
}

// marksIn skips an ASCII run that does not hold, in lower case, some query
// term less its last two letters: that holds only if Porter's stemmer
// rewrites at most the last two letters of what it keeps of a word. It is
// checked on words built to take each of its rules and, when the shared
// evaluation data is there, on every word of the SciFact corpus.
func TestPorterStemsKeepTheWordsStart(t *testing.T) {
	ix, err := Open(t.TempDir())
	require.NoError(t, err)
	defer func() { require.NoError(t, ix.Close()) }()
	words := map[string]bool{}
	for _, stem := range []string{"a", "ab", "sens", "poss", "relat", "organ", "hop", "happ", "conform", "agre", "debil", "rat", "y", "by"} {
		for _, suffix := range []string{"", "s", "es", "ies", "sses", "ed", "ing", "y", "ly", "eed", "ational", "tional", "enci", "anci",
			"izer", "bli", "abli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism", "iveness", "fulness",
			"ousness", "aliti", "iviti", "biliti", "ibility", "ability", "logi", "icate", "ative", "alize", "iciti", "ical", "ful",
			"ness", "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "sion", "tion", "ou",
			"ism", "ate", "iti", "ous", "ive", "ize", "e", "ll", "ies's", "'s", "ied", "ying", "bled", "izing", "ating"} {
			words[stem+suffix] = true
		}
	}
	if f, err := os.Open(filepath.Join("..", "..", "..", "shared", "data", "scifact", "corpus.jsonl")); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			for _, w := range strings.FieldsFunc(sc.Text(), func(r rune) bool { return r >= utf8.RuneSelf || !unicode.IsLetter(r) }) {
				words[w] = true
			}
		}
		require.NoError(t, sc.Err())
		require.NoError(t, f.Close())
	} else {
		t.Logf("SciFact corpus not available (%v): built words only", err)
	}
	for w := range words {
		for _, tok := range ix.analyzer.Analyze([]byte(w)) {
			term := string(tok.Term)
			key := term[:max(0, len(term)-2)]
			require.True(t, containsLowerASCII(w, key), "%q → %q", w, term)
			require.True(t, newQueryMarks(map[string]bool{term: true}).mayHold(w), "%q → %q", w, term)
		}
	}
	t.Logf("%d words", len(words))
}
