package tokens

import (
	"hash/maphash"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer/codec"
)

// The fast path counts cl100k_base text in a small alphabet without the
// codec, which spends nearly all its time in its regexp2 pre-tokenizer
// (converting text to runes, allocating every match) and in byte-pair
// merges keyed by strings. tiktoken encodes each pre-token on its own, so a
// text's count is the sum of its pre-tokens' counts: cl100kNext splits the
// text as the codec does; a pre-token that is a token counts one (most
// are); the rest are merged by bpeCount, exactly as the codec merges them,
// and their counts cached, as they repeat (" Kubernetes", " trotioquil").

// Byte classes of the fast path's alphabet, 0x20–0x7E plus '\t', '\n' and
// '\r'. Every other byte is fastOther and goes to the codec (see
// countCl100k): non-ASCII needs Unicode classes, \v and \f would be more
// whitespace, and the codec drops DEL, which its generated matcher leaves
// out of every class ("a\x7fb" is 2 tokens).
const (
	fastOther   = iota
	fastLetter  // [A-Za-z]: \p{L}
	fastDigit   // [0-9]: \p{N}
	fastPunct   // the rest of 0x21–0x7E: [^\s\p{L}\p{N}]
	fastSpace   // ' ', '\t': \s but not [\r\n]
	fastNewline // '\r', '\n'
)

var fastClass = func() (t [256]uint8) {
	for b := 0x21; b <= 0x7e; b++ {
		t[b] = fastPunct
	}
	for b := 'a'; b <= 'z'; b++ {
		t[b], t[b-'a'+'A'] = fastLetter, fastLetter
	}
	for b := '0'; b <= '9'; b++ {
		t[b] = fastDigit
	}
	t[' '], t['\t'] = fastSpace, fastSpace
	t['\r'], t['\n'] = fastNewline, fastNewline
	return t
}()

// span is the length of the run of class-cl bytes at the start of s.
func span(s string, cl uint8) int {
	i := 0
	for i < len(s) && fastClass[s[i]] == cl {
		i++
	}
	return i
}

// cl100kNext returns the length of the first pre-token of s (non-empty) as
// cl100k_base's pattern
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// splits it, or 0 if s starts with a byte outside the fast alphabet. The
// first alternative that matches wins, even when a later one would match
// more ("'sa" is "'s", "a").
func cl100kNext(s string) int {
	switch fastClass[s[0]] {
	case fastLetter:
		return 1 + span(s[1:], fastLetter)
	case fastDigit:
		n := 1
		for n < 3 && n < len(s) && fastClass[s[n]] == fastDigit {
			n++
		}
		return n
	case fastPunct:
		if s[0] == '\'' {
			if n := contraction(s); n > 0 {
				return n
			}
		}
		if len(s) > 1 && fastClass[s[1]] == fastLetter {
			return 2 + span(s[2:], fastLetter) // "[^\r\n\p{L}\p{N}]?\p{L}+"
		}
		return punctuation(s, 0)
	case fastSpace:
		if len(s) > 1 {
			switch fastClass[s[1]] {
			case fastLetter: // ' ' and '\t' are both in [^\r\n\p{L}\p{N}]
				return 2 + span(s[2:], fastLetter)
			case fastPunct: // but only ' ' may lead punctuation
				if s[0] == ' ' {
					return punctuation(s, 1)
				}
			}
		}
		return whitespace(s)
	case fastNewline:
		return whitespace(s)
	}
	return 0
}

// contraction matches "(?i:'s|'t|'re|'ve|'m|'ll|'d)" at s, which starts
// with an apostrophe; b|0x20 lowers only ASCII letters onto these letters.
func contraction(s string) int {
	if len(s) < 2 {
		return 0
	}
	switch s[1] | 0x20 {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if len(s) > 2 && s[2]|0x20 == 'e' {
			return 3
		}
	case 'l':
		if len(s) > 2 && s[2]|0x20 == 'l' {
			return 3
		}
	}
	return 0
}

// punctuation matches " ?[^\s\p{L}\p{N}]+[\r\n]*" where s[i] is the
// first punctuation byte.
func punctuation(s string, i int) int {
	i += 1 + span(s[i+1:], fastPunct)
	return i + span(s[i:], fastNewline)
}

// whitespace matches the whitespace alternatives at s, which starts with
// whitespace the letter and punctuation alternatives did not take.
//
// "\s*[\r\n]+" should take the run up to its last CR/LF, but the codec's
// generated matcher (regexp2cg) backtracks "\s*" with IndexOfAny instead
// of LastIndexOfAny, so it stops after the FIRST run of CR/LF: "\n \nx" is
// "\n", " \n", "x" there. We match the codec, not the regexp.
func whitespace(s string) int {
	end, nl := 0, -1
scan:
	for ; end < len(s); end++ {
		switch fastClass[s[end]] {
		case fastNewline:
			if nl < 0 {
				nl = end
			}
		case fastSpace:
			if nl >= 0 {
				break scan
			}
		default:
			break scan
		}
	}
	switch {
	case nl >= 0:
		return end // "\s*[\r\n]+", as the codec matches it
	case end == len(s) || end == 1:
		return end // "\s+(?!\S)" at the end of text, or "\s+" of one
	default:
		return end - 1 // "\s+(?!\S)": the last space goes with what follows
	}
}

// countCl100k counts s for cl100k_base. It splits fast-alphabet text
// itself; around any other byte the codec counts, from the last boundary
// before that byte to the first after.
//
// A boundary is an ASCII letter or digit followed by an ASCII byte that is
// neither: letter and digit runs stop there and no other alternative takes
// a letter or digit, so no match crosses it, and the text after it splits
// as if it began there. So prose with an occasional "—" or "é" still takes
// the fast path but for a word or two.
func (c *Counter) countCl100k(s string) int {
	n := 0
	last, nLast := 0, 0 // the last boundary passed and the count of s[:last]
	for i := 0; i < len(s); {
		if boundary(s, i) {
			last, nLast = i, n
		}
		k := cl100kNext(s[i:])
		switch {
		case k == 0:
			end := i + 1
			for end < len(s) && !boundary(s, end) {
				end++
			}
			n = nLast + c.count(s[last:end])
			i = end
			continue
		case k == 1:
			n++ // every byte is a token
		case k > maxBPE:
			n += c.count(s[i : i+k]) // alone, it splits to itself
		case c.vocab.rank(s[i:i+k]) != noRank:
			n++ // most pre-tokens are a token: skip the cache
		default:
			n += c.pretokens.count(s[i:i+k], c.vocab)
		}
		i += k
	}
	return n
}

// boundary reports whether s splits at i (see countCl100k).
func boundary(s string, i int) bool {
	return i > 0 && i < len(s) && alnum(s[i-1]) && s[i] < utf8.RuneSelf && !alnum(s[i])
}

func alnum(b byte) bool { return fastClass[b] == fastLetter || fastClass[b] == fastDigit }

// maxBPE: longer pre-tokens are rare (long words, rulers of dashes, deep
// indentation) and go to the codec, which bounds bpeCount's work and the
// pre-token cache's entries.
const maxBPE = 32

// noRank marks a pair of parts that is not a token.
const noRank = math.MaxUint32

// bpeCount is the number of tokens tok (2 to maxBPE bytes) encodes to:
// the codec's byte-pair merge (mergePairsScan) repeatedly joins the
// adjacent parts whose concatenation has the lowest rank, leftmost first,
// until no adjacent pair is a token.
func bpeCount(v *fastVocab, tok string) int {
	if v.rank(tok) != noRank {
		return 1
	}
	var startBuf [maxBPE + 1]uint8
	var pairBuf [maxBPE]uint32
	start := startBuf[:len(tok)+1] // part i is tok[start[i]:start[i+1]]
	pair := pairBuf[:len(tok)-1]   // pair[i]: rank of parts i and i+1 joined
	for i := range start {
		start[i] = uint8(i)
	}
	for i := range pair {
		pair[i] = v.pairs[int(tok[i])<<7|int(tok[i+1])]
	}
	for len(pair) > 0 {
		// The leftmost lowest rank, branch-free: rank and index in one key.
		best := uint64(noRank) << 8
		for i, r := range pair {
			best = min(best, uint64(r)<<8|uint64(i))
		}
		if best>>8 == noRank {
			break
		}
		m := int(best & 0xff)
		// Join parts m and m+1, then re-rank the pairs the joined part is in.
		start = append(start[:m+1], start[m+2:]...)
		if m+1 < len(pair) {
			pair = append(pair[:m+1], pair[m+2:]...)
			pair[m] = v.rank(tok[start[m]:start[m+2]])
		} else {
			pair = pair[:m]
		}
		if m > 0 {
			pair[m-1] = v.rank(tok[start[m-1]:start[m+1]])
		}
	}
	return len(start) - 1
}

// fastVocab holds the ranks of cl100k_base's tokens made of fast-alphabet
// bytes, the only ones bpeCount asks for. The codec keeps its vocabulary
// unexported, so it is read back token by token through Decode, from a
// codec of its own so that the decode table that builds is freed.
//
// Looking ranks up is nearly all of bpeCount's work, and a Go map with
// string keys made cold counting a third as fast, so the tokens of up to
// 8 bytes (75K of 95K, and nearly every lookup) sit in an open-addressing
// table keyed by their bytes packed into a uint64, and pairs of bytes, the
// first round of every merge, in a dense array.
type fastVocab struct {
	pairs [128 * 128]uint32 // rank of the 2-byte token a, b at a<<7|b
	short []shortToken      // open addressing by slot(pack(token))
	long  map[string]uint32 // longer tokens
}

type shortToken struct {
	key  uint64 // pack(token), 0 for an empty slot
	rank uint32
}

const fastVocabBits = 17 // 128K slots for 75K keys

var cl100kVocab = sync.OnceValue(func() *fastVocab {
	v := &fastVocab{
		short: make([]shortToken, 1<<fastVocabBits),
		long:  map[string]uint32{},
	}
	for i := range v.pairs {
		v.pairs[i] = noRank
	}
	codec := codec.NewCl100kBase()
	for id := uint32(0); ; id++ {
		tok, err := codec.Decode([]uint{uint(id)})
		if err != nil {
			return v // ranks are dense: 0 to 100255
		}
		switch {
		case !fastOnly(tok):
		case len(tok) == 2:
			v.pairs[int(tok[0])<<7|int(tok[1])] = id
		case len(tok) <= 8:
			k := pack(tok)
			i := slot(k)
			for v.short[i].key != 0 {
				i = (i + 1) & (1<<fastVocabBits - 1)
			}
			v.short[i] = shortToken{k, id}
		default:
			v.long[tok] = id
		}
	}
})

func fastOnly(s string) bool {
	for i := range len(s) {
		if fastClass[s[i]] == fastOther {
			return false
		}
	}
	return true
}

// pack is a one-to-one key for strings of 1 to 8 bytes without NUL: their
// bytes, little-endian. From 4 bytes on it ORs two overlapping 4-byte
// loads, which the compiler makes single loads.
func pack(s string) uint64 {
	if n := len(s); n >= 4 {
		lo := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
		hi := uint64(s[n-4]) | uint64(s[n-3])<<8 | uint64(s[n-2])<<16 | uint64(s[n-1])<<24
		return lo | hi<<(8*(n-4))
	}
	var k uint64
	for i := range len(s) {
		k |= uint64(s[i]) << (8 * i)
	}
	return k
}

func slot(k uint64) uint64 { return (k * 0x9e3779b97f4a7c15) >> (64 - fastVocabBits) }

// rank returns the rank of token s, made of fast-alphabet bytes, or noRank.
func (v *fastVocab) rank(s string) uint32 {
	switch {
	case len(s) == 2:
		return v.pairs[int(s[0])<<7|int(s[1])]
	case len(s) <= 8:
		k := pack(s)
		for i := slot(k); v.short[i].key != 0; i = (i + 1) & (1<<fastVocabBits - 1) {
			if v.short[i].key == k {
				return v.short[i].rank
			}
		}
		return noRank
	}
	if r, ok := v.long[s]; ok {
		return r
	}
	return noRank
}

// pretokenCache maps pre-tokens to their counts: a fixed, 4-way
// set-associative table of atomic pointers, so that hits, which are nearly
// every lookup, take no lock, and memory stays bounded (64K entries of 48
// bytes plus 12 bytes a slot: 4 MB). Each slot has a tag, bits of the
// pre-token's hash, so that a lookup reads only the entries likely to match
// instead of 4 scattered ones; entries are still compared in full, so a
// tag that races with its entry only costs a miss.
type pretokenCache struct {
	seed  maphash.Seed
	tags  []atomic.Uint32 // 0: empty
	slots []atomic.Pointer[pretokenEntry]
}

// pretokenEntry holds its pre-token inline: one pointer-free allocation.
type pretokenEntry struct {
	len, n uint8
	tok    [maxBPE]byte
}

const (
	pretokenWays = 4
	pretokenSets = 1 << 14
)

func newPretokenCache() *pretokenCache {
	return &pretokenCache{
		seed:  maphash.MakeSeed(),
		tags:  make([]atomic.Uint32, pretokenWays*pretokenSets),
		slots: make([]atomic.Pointer[pretokenEntry], pretokenWays*pretokenSets),
	}
}

// count returns tok's count, computing it with bpeCount if tok is not held.
func (p *pretokenCache) count(tok string, v *fastVocab) int {
	h := maphash.String(p.seed, tok)
	tag := uint32(h>>32) | 1
	first := int(h&(pretokenSets-1)) * pretokenWays
	tags, slots := p.tags[first:][:pretokenWays], p.slots[first:][:pretokenWays]
	free := -1
	for i := range tags {
		switch tags[i].Load() {
		case 0:
			if free < 0 {
				free = i
			}
		case tag:
			if e := slots[i].Load(); e != nil && string(e.tok[:e.len]) == tok {
				return int(e.n)
			}
		}
	}
	n := bpeCount(v, tok)
	if free < 0 {
		free = rand.IntN(pretokenWays)
	}
	e := &pretokenEntry{len: uint8(len(tok)), n: uint8(n)}
	copy(e.tok[:], tok)
	slots[free].Store(e)
	tags[free].Store(tag)
	return n
}
