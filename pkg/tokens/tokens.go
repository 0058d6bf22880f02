// Package tokens counts tokens the way the model that reads memory does
// (tiktoken, one encoding, configurable), because every Layer 1 limit is a
// token limit.
package tokens

import (
	"fmt"
	"hash/maphash"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"

	"github.com/garden-bloom/memory/pkg/lru"
)

// DefaultEncoding is the encoding limits are counted in unless configured.
const DefaultEncoding = "cl100k_base"

// Counter counts tokens in one encoding. It is safe for concurrent use.
type Counter struct {
	codec tokenizer.Codec
	// pieces memoises the counts of the pieces Count splits text into:
	// memory files change a few lines at a time, so re-counting a 30 KB
	// facts.md after an append tokenizes only the new lines (for
	// cl100k_base, the chunk they are in: see chunkEnd).
	pieces *lru.Cache[string, int]
	// For cl100k_base only, the fast path's vocabulary and its cache of the
	// counts of pre-tokens that are more than one token (see countCl100k).
	vocab     *fastVocab
	pretokens *pretokenCache
}

// pieceCacheSize bounds the piece-count cache (approximate bytes). Layer 1
// is at most 12K tokens (~48 KB) an agent, so 64 MB keeps the pieces of
// ~1,300 agents. With 16 MB, counting 1,000 agents' 35 KB documents in turn,
// each with a line appended, found every one evicted: 0.71 ms a count, round
// after round, against 68 µs once the 64 MB cache held them (counting is
// on the apply path, issue #9).
const pieceCacheSize = 64 << 20

// New returns a counter for encoding (e.g. "cl100k_base", "o200k_base").
func New(encoding string) (*Counter, error) {
	if encoding == "" {
		encoding = DefaultEncoding
	}
	codec, err := tokenizer.Get(tokenizer.Encoding(encoding))
	if err != nil {
		return nil, fmt.Errorf("tokens: encoding %q: %w", encoding, err)
	}
	c := &Counter{codec: codec, pieces: lru.New[string, int](pieceCacheSize)}
	if codec.GetName() == "cl100k_base" {
		c.vocab = cl100kVocab()
		c.pretokens = newPretokenCache()
	}
	return c, nil
}

// Encoding is the name of the counter's encoding, recorded in meta.json.
func (c *Counter) Encoding() string { return c.codec.GetName() }

// Count returns the number of tokens in s.
//
// tiktoken first splits text with its encoding's pattern and then encodes
// each match on its own, so counts add up over any split no match crosses.
// No pattern alternative of cl100k_base or o200k_base continues past a
// newline into a letter, digit or non-space ASCII character other than '/'
// (only the whitespace alternatives reach a newline, and they stop there;
// TestCountAddsUpOverPieces checks it against the plain count), so Count
// splits after such newlines and counts each piece once (see pieces).
//
// For cl100k_base it counts without the codec wherever text is plain ASCII
// (see countCl100k), ten times faster, and caches chunks of pieces instead.
func (c *Counter) Count(s string) int {
	count, end := c.count, pieceEnd
	if c.vocab != nil {
		count, end = c.countCl100k, chunkEnd
	}
	total := 0
	for len(s) > 0 {
		piece := s[:end(s)]
		s = s[len(piece):]
		if len(piece) < minCachedPiece {
			total += count(piece)
			continue
		}
		n, ok := c.pieces.Get(piece)
		if !ok {
			n = count(piece)
			c.pieces.Put(strings.Clone(piece), n, int64(len(piece))+64)
		}
		total += n
	}
	return total
}

// minCachedPiece: shorter pieces are cheaper to count than to look up.
const minCachedPiece = 24

// pieceEnd returns the length of s's first piece: up to and including the
// first newline followed by a safe start (see Count), or all of s.
func pieceEnd(s string) int {
	from := 0
	for {
		i := strings.IndexByte(s[from:], '\n')
		if i < 0 {
			return len(s)
		}
		end := from + i + 1
		if end < len(s) && safeStart(s[end:]) {
			return end
		}
		from = end
		if from >= len(s) {
			return len(s)
		}
	}
}

// chunkEnd returns the length of s's first chunk: pieces up to and
// including one whose hash is 0 mod 8, or 8 KB of them. Once countCl100k
// makes counting cheap, a piece-cache lookup and insertion per line take a
// third of the time of counting new text, so for cl100k_base the cache
// holds chunks of about 8 lines instead. Chunks end where their content
// says, whatever precedes, so an edit recounts only the chunk it is in.
func chunkEnd(s string) int {
	end := 0
	for end < len(s) && end < 8<<10 {
		n := pieceEnd(s[end:])
		end += n
		if maphash.String(chunkSeed, s[end-n:end])&7 == 0 {
			break
		}
	}
	return end
}

var chunkSeed = maphash.MakeSeed()

// safeStart reports whether a pattern match can start fresh at s: s begins
// with a letter, a digit or an ASCII character that is not whitespace —
// except '/', which o200k_base's punctuation alternative ("[\r\n/]*")
// carries across a newline.
func safeStart(s string) bool {
	if b := s[0]; b < utf8.RuneSelf {
		return b > ' ' && b != 0x7f && b != '/'
	}
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func (c *Counter) count(s string) int {
	n, err := c.codec.Count(s)
	if err != nil {
		// Count fails only on invalid UTF-8, which validation rejects before
		// anything is counted; a byte-based bound keeps limits safe anyway.
		return len(s)
	}
	return n
}

// Cache is the cache of piece counts, for the memory budget and metrics.
func (c *Counter) Cache() *lru.Cache[string, int] { return c.pieces }
