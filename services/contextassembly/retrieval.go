package contextassembly

import (
	"errors"
	"flag"

	"github.com/garden-bloom/memory/pkg/fulltext"
)

// Retrieval tunes how AssembleContext spends what the budget leaves after
// Layer 1 (docs/reading.md, "What fills the budget"). Each component can
// be switched off alone, which is how make bench-quality measures what it
// adds; the defaults are what every figure in the README is measured with.
type Retrieval struct {
	// Neighbors is how many chunks before and after a hit come with it,
	// so a hit is read in its context (0: the hit's chunk alone).
	Neighbors int
	// WholeByShare puts a source in whole only when its share of the hits'
	// score is at least its share of the budget left; false puts every
	// source with a hit in whole when it fits, best first.
	WholeByShare bool
	// Diversity multiplies the score of each further excerpt of a file
	// already in the context, so one long source cannot take the budget
	// (1: no discount).
	Diversity float64
	// Expand asks search to expand the hint with the words of its best
	// first-pass chunks (pseudo-relevance feedback, RM3).
	Expand bool
	// ExpandWide expands the hint as Expand does, but only when the budget
	// left is more than search's most hits can fill (fulltext.MaxTopK ×
	// TopKPerTokens) and less than the agent's sources: such a budget
	// still has to choose, and the expansion's recall is what it can buy;
	// at smaller budgets the expansion's hits would displace better
	// first-pass ones, and a budget every source fits in has nothing to
	// choose (the second pass would only cost time).
	ExpandWide bool
	// TopKPerTokens sizes the search when the request leaves top_k unset:
	// one hit per this many tokens of budget left after Layer 1, at least
	// DefaultTopK and at most 100 (0: always DefaultTopK).
	TopKPerTokens int
	// SourcePrior counts a file's share of all the hits' score once more
	// in each of its excerpts' scores: a chunk of a file that answers much
	// of the hint outranks a like chunk of a file that answers little.
	SourcePrior bool
	// Graph follows the links of the best hits to the entities' other
	// facts (graph.go) when a request does not say; off, as Layer 2 is
	// read only on explicit request.
	Graph bool
}

// DefaultRetrieval is what memoryd runs with.
var DefaultRetrieval = Retrieval{Neighbors: 2, WholeByShare: true, Diversity: 1, Expand: false, ExpandWide: true, TopKPerTokens: 60, SourcePrior: true}

// RegisterFlags adds the retrieval flags, with DefaultRetrieval's values.
func (r *Retrieval) RegisterFlags(fs *flag.FlagSet) {
	d := DefaultRetrieval
	fs.IntVar(&r.Neighbors, "context-neighbors", d.Neighbors, "AssembleContext: chunks before and after each search hit that come with it (0: the hit alone)")
	fs.BoolVar(&r.WholeByShare, "context-whole-by-share", d.WholeByShare, "AssembleContext: a source goes in whole only when its share of the hits' score is at least its share of the budget (false: every source with a hit, whole, when it fits)")
	fs.Float64Var(&r.Diversity, "context-diversity", d.Diversity, "AssembleContext: score factor of each further excerpt of one file (1: no discount)")
	fs.BoolVar(&r.Expand, "context-expand", d.Expand, "AssembleContext: expand the query hint with the words of its best first-pass hits (pseudo-relevance feedback, RM3)")
	fs.BoolVar(&r.ExpandWide, "context-expand-wide", d.ExpandWide, "AssembleContext: expand the query hint (as --context-expand) when the budget left is more than search's 100 hits can fill (100 × --context-topk-tokens) and less than the agent's sources")
	fs.BoolVar(&r.SourcePrior, "context-source-prior", d.SourcePrior, "AssembleContext: weigh each excerpt by its file's share of the hits' score too")
	fs.BoolVar(&r.Graph, "context-graph", d.Graph, "AssembleContext without graph set: follow the best hits' [[links]] to the entities' other facts, Layer 2 included")
	fs.IntVar(&r.TopKPerTokens, "context-topk-tokens", d.TopKPerTokens, "AssembleContext without top_k: one search hit per this many tokens of budget after Layer 1, 20 to 100 (0: always 20)")
}

// Validate checks the flags.
func (r *Retrieval) Validate() error {
	switch {
	case r.Neighbors < 0 || r.Neighbors > 10:
		return errors.New("--context-neighbors must be 0 to 10")
	case r.Diversity <= 0 || r.Diversity > 1:
		return errors.New("--context-diversity must be above 0 and at most 1")
	case r.TopKPerTokens < 0:
		return errors.New("--context-topk-tokens must not be negative")
	}
	return nil
}

// topK is the number of hits to ask for: the request's, else sized by
// the budget left.
func (r *Retrieval) topK(requested, left int) int {
	if requested > 0 {
		return requested
	}
	if r.TopKPerTokens <= 0 {
		return DefaultTopK
	}
	return min(max(left/r.TopKPerTokens, DefaultTopK), fulltext.MaxTopK)
}

// expand says whether to expand the hint for a budget of left tokens
// over sources of the given tokens.
func (r *Retrieval) expand(left, sources int) bool {
	return r.Expand || (r.ExpandWide && r.TopKPerTokens > 0 && left > fulltext.MaxTopK*r.TopKPerTokens && sources > left)
}
