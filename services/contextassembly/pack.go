package contextassembly

import (
	"cmp"
	"slices"
	"strings"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/chunker"
)

// Packing: what fills the budget after Layer 1. A search hit is a chunk (a
// turn, a bullet, a paragraph); its short neighbours compete with a share
// of its score (neighborWeight). Each excerpt's score also counts its
// file's share of all the hits' score (Retrieval.SourcePrior). A source goes in whole only when the hits
// it holds are worth its tokens (Retrieval.WholeByShare).
// Candidates are taken greedily by score, each further excerpt of a file
// discounted (Retrieval.Diversity); once a source's excerpts cost half of
// it, the whole source replaces them. Each file is one section: its chunks
// in document order, under their headings, "…" between runs that do not
// touch. What the budget leaves then completes the sources the hits came
// from, best first, then goes to the sources no hit named, whole, in order.

// maxChunkChars is the search index's chunk limit (searchindex/indexer.go):
// the files are cut the same way here, so a hit's span names a chunk.
const maxChunkChars = 4000

// packFile is a file hits came from, or a source.
type packFile struct {
	path   string
	commit string // commit (git file) or ETag (source)
	layer  int32
	text   string
	// lines and chunks are split from text on first use (split): most
	// sources are named by no hit and go in whole or not at all.
	lines  []string
	chunks []chunker.Chunk
	// source is the whole source's section (nil: a git file).
	source *memoryv1.ContextSection
	// hitScore is the sum of its hits' scores.
	hitScore float64

	// What is in the context: the whole file, or excerpts (chunk ranges).
	whole   bool
	ranges  []chunkRange
	taken   int // runs of chunks taken, for the diversity discount
	content string
	tokens  int // of content
}

// chunkRange is chunks from..to of a file, inclusive.
type chunkRange struct{ from, to int }

// candidate kinds.
const (
	candExcerpt = iota
	candWhole
)

type packCandidate struct {
	kind  int
	file  *packFile
	r     chunkRange
	score float64
}

// packer holds one assembly's packing state.
type packer struct {
	s      *Service
	cfg    Retrieval
	files  map[string]*packFile
	order  []*packFile // files in the context, by first inclusion
	budget int
	used   int // tokens spent, Layer 1 and warnings included
	// leftOut counts the sources no hit named that did not fit.
	leftOut   int
	truncated bool
}

// chunkAt is the index of the chunk holding line (1-based), or -1.
func (f *packFile) chunkAt(line int) int {
	i, found := slices.BinarySearchFunc(f.chunks, line, func(c chunker.Chunk, l int) int {
		switch {
		case c.EndLine < l:
			return -1
		case c.StartLine > l:
			return 1
		}
		return 0
	})
	if !found {
		return -1
	}
	return i
}

func newPackFile(path, commit, text string, layer int32) *packFile {
	return &packFile{path: path, commit: commit, layer: layer, text: text}
}

// split cuts f's text into lines and chunks, once.
func (f *packFile) split() {
	if f.lines == nil {
		f.lines = strings.Split(f.text, "\n")
		f.chunks = chunker.Split(f.text, chunker.Options{MaxChars: maxChunkChars})
	}
}

// neighborMaxTokens is the longest neighbouring chunk that comes with a
// hit: a turn of a conversation or a short paragraph, not a long section,
// which stands on its own and competes as its own hit when it matches.
// (At 64, many replies in a conversation stayed out: a turn with a
// picture's caption runs past it; docs/quality.md has the figures.)
const neighborMaxTokens = 128

// neighborWeight is the share of a hit's score its neighbouring chunks
// compete with (again at each further step): a hit's context comes soon
// after it, but not before a hit much like it.
const neighborWeight = 0.7

// excerpts turns the file's hits into candidates: each hit's chunk with
// its score, and up to Retrieval.Neighbors short chunks on each side with
// a share of it (neighborWeight); a chunk several hits name takes the best
// of their scores.
func (p *packer) excerpts(f *packFile, hits []*memoryv1.SearchResult) []packCandidate {
	f.split()
	short := func(j int) bool {
		return j >= 0 && j < len(f.chunks) && p.s.count(f.chunks[j].Text) <= neighborMaxTokens
	}
	score := map[int]float64{}
	for _, h := range hits {
		i := f.chunkAt(int(h.GetSpan().GetStartLine()))
		if i < 0 {
			continue // the file changed since it was indexed
		}
		score[i] = max(score[i], h.GetScore())
		for _, step := range []int{-1, 1} {
			w := h.GetScore()
			for d := 1; d <= p.cfg.Neighbors && short(i+step*d); d++ {
				w *= neighborWeight
				score[i+step*d] = max(score[i+step*d], w)
			}
		}
	}
	out := make([]packCandidate, 0, len(score))
	for i, sc := range score {
		out = append(out, packCandidate{kind: candExcerpt, file: f, r: chunkRange{i, i}, score: sc})
	}
	return out
}

// render is f's content with ranges: each under its heading path when that
// changes, "…" between ranges that do not touch.
func (f *packFile) render(ranges []chunkRange) string {
	var b strings.Builder
	var last []string
	for i, r := range ranges {
		if i > 0 && r.from > ranges[i-1].to+1 {
			b.WriteString("…\n")
		}
		if h := f.chunks[r.from].Headings; !slices.Equal(h, last) {
			for d, text := range h {
				if d < len(last) && last[d] == text {
					continue
				}
				b.WriteString(strings.Repeat("#", d+1) + " " + text + "\n")
			}
			last = h
		}
		from, to := f.chunks[r.from].StartLine, f.chunks[r.to].EndLine
		for _, l := range f.lines[from-1 : min(to, len(f.lines))] {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// withRange is ranges with r added, sorted and merged.
func withRange(ranges []chunkRange, r chunkRange) []chunkRange {
	out := append(slices.Clone(ranges), r)
	slices.SortFunc(out, func(a, b chunkRange) int { return cmp.Compare(a.from, b.from) })
	merged := out[:0]
	for _, x := range out {
		if n := len(merged); n > 0 && x.from <= merged[n-1].to+1 {
			merged[n-1].to = max(merged[n-1].to, x.to)
			continue
		}
		merged = append(merged, x)
	}
	return merged
}

// cost is what f costs in the context with content of tokens.
func (p *packer) cost(f *packFile, tokens int) int {
	return p.s.count(f.path) + tokens
}

// current is what f costs now (0: not in the context).
func (p *packer) current(f *packFile) int {
	if f.content == "" {
		return 0
	}
	return p.cost(f, f.tokens)
}

// place puts content into f if the budget allows; false: it does not fit.
func (p *packer) place(f *packFile, content string, tokens int) bool {
	delta := p.cost(f, tokens) - p.current(f)
	if p.used+delta > p.budget {
		return false
	}
	if f.content == "" {
		p.order = append(p.order, f)
	}
	p.used += delta
	f.content, f.tokens = content, tokens
	return true
}

// takeExcerpt adds r to f's excerpts if it fits.
func (p *packer) takeExcerpt(f *packFile, r chunkRange) bool {
	if f.whole {
		return true // already there
	}
	ranges := withRange(f.ranges, r)
	content := f.render(ranges)
	if !p.place(f, content, p.s.count(content)) {
		return false
	}
	f.ranges = ranges
	f.taken = len(ranges) // runs of chunks: a neighbour that joins a run is no new excerpt
	if f.source != nil && f.tokens*2 >= int(f.source.Tokens) {
		// Half of the source is in: the rest costs less than what is
		// in, and holds what is around the hits.
		p.takeWhole(f)
	}
	return true
}

// takeWhole puts source f in whole if it fits.
func (p *packer) takeWhole(f *packFile) bool {
	if f.whole {
		return true
	}
	if !p.place(f, f.source.Content, int(f.source.Tokens)) {
		return false
	}
	f.whole, f.ranges = true, nil
	return true
}

// pack fills the budget from cands.
func (p *packer) pack(cands []packCandidate) {
	for len(cands) > 0 {
		// The best candidate by score, discounted by what its file already has.
		best, bestScore := -1, 0.0
		for i, c := range cands {
			sc := c.score
			for range c.file.taken {
				sc *= p.cfg.Diversity
			}
			if best < 0 || sc > bestScore || sc == bestScore && less(c, cands[best]) {
				best, bestScore = i, sc
			}
		}
		c := cands[best]
		cands = slices.Delete(cands, best, best+1)
		switch c.kind {
		case candWhole:
			if !p.takeWhole(c.file) {
				p.truncated = true
			}
		case candExcerpt:
			if !p.takeExcerpt(c.file, c.r) {
				p.truncated = true
			}
		}
	}
}

// less orders candidates of equal score: by file, then position, so the
// context is the same for the same request.
func less(a, b packCandidate) bool {
	if a.file.path != b.file.path {
		return a.file.path < b.file.path
	}
	return a.r.from < b.r.from
}

// packed is what packHits put in the context.
type packed struct {
	// sections in order of first inclusion; spent is their cost.
	sections []*memoryv1.ContextSection
	spent    int
	// truncated: something did not fit; leftOut: how many sources no hit
	// named were left out.
	truncated bool
	leftOut   int
	warnings  []string
}

// packHits fills what the budget leaves after Layer 1 (used of budget
// spent) with the hits and sources; texts reads a hit's file (fileTexts).
func (s *Service) packHits(files agentFiles, texts func(path string) (string, bool), used, budget int, hits []*memoryv1.SearchResult,
	srcs []*memoryv1.ContextSection) packed {
	var out packed
	p := &packer{s: s, cfg: s.retrieval, files: map[string]*packFile{}, budget: budget, used: used}
	for _, src := range srcs {
		f := newPackFile(src.File, src.Commit, src.Content, 0)
		f.source = src
		p.files[src.File] = f
	}
	byFile := map[string][]*memoryv1.SearchResult{}
	var order []string
	total := 0.0
	for _, h := range hits {
		if _, ok := byFile[h.GetFile()]; !ok {
			order = append(order, h.GetFile())
		}
		byFile[h.GetFile()] = append(byFile[h.GetFile()], h)
		total += h.GetScore()
	}
	var cands []packCandidate
	for _, path := range order {
		f := p.files[path]
		if f == nil {
			// A git file (a memory file outside Layer 1, logic): read at
			// the assembled commit, so its lines match what the context
			// is stamped with.
			text, ok := texts(path)
			if !ok {
				out.warnings = append(out.warnings, path+": not readable at this commit")
				continue
			}
			h := byFile[path][0]
			f = newPackFile(path, files.commit.String(), text, h.GetLayer())
			p.files[path] = f
		}
		for _, h := range byFile[path] {
			f.hitScore += h.GetScore()
		}
		cands = append(cands, p.excerpts(f, byFile[path])...)
		if f.source != nil {
			left := budget - used
			worth := !s.retrieval.WholeByShare || total > 0 && left > 0 &&
				f.hitScore/total >= float64(p.cost(f, int(f.source.Tokens)))/float64(left)
			if worth {
				cands = append(cands, packCandidate{kind: candWhole, file: f, score: f.hitScore})
			}
		}
	}
	if s.retrieval.SourcePrior && total > 0 {
		for i, c := range cands {
			if c.kind == candExcerpt {
				cands[i].score *= 1 + c.file.hitScore/total
			}
		}
	}
	p.pack(cands)
	// What is left completes the sources the hits came from, best first:
	// the rest of a session around its hits before anything no hit named.
	var partial []*packFile
	for _, f := range p.files {
		if f.source != nil && f.hitScore > 0 && !f.whole {
			partial = append(partial, f)
		}
	}
	slices.SortFunc(partial, func(a, b *packFile) int {
		if c := cmp.Compare(b.hitScore, a.hitScore); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	for _, f := range partial {
		p.takeWhole(f)
	}
	// Then the sources no hit named, whole, in order.
	for _, src := range srcs {
		f := p.files[src.File]
		if f.content != "" || f.hitScore > 0 {
			continue
		}
		if !p.takeWhole(f) {
			p.truncated = true
			p.leftOut++
		}
	}
	for _, f := range p.order {
		sec := &memoryv1.ContextSection{Kind: "search_hit", File: f.path, Commit: f.commit, Layer: f.layer,
			Content: f.content, Tokens: int32(f.tokens), Score: f.hitScore}
		if f.whole {
			sec.Kind = "source"
		} else {
			sec.Span = &memoryv1.Span{StartLine: int32(f.chunks[f.ranges[0].from].StartLine),
				EndLine: int32(f.chunks[f.ranges[len(f.ranges)-1].to].EndLine)}
		}
		out.sections = append(out.sections, sec)
	}
	out.spent, out.truncated, out.leftOut = p.used-used, p.truncated, p.leftOut
	return out
}
