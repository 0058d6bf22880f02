package textanalysis

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// fullFold implements Unicode full case folding (CaseFolding.txt C+F), e.g.
// ß→ss, ﬁ→fi, ς→σ. It is stateless and safe for concurrent use.
var fullFold = cases.Fold()

const (
	softHyphen = '\u00AD'
	zwnj       = '\u200C'
	zwj        = '\u200D'
	// Cyrillic stress marks as printed in dictionaries and textbooks
	// (за́мок, замо́к); they are not part of the spelling.
	combiningAcute = '\u0301'
	combiningGrave = '\u0300'
)

// normalizeTerm returns the normalised form of one token. It never modifies
// term in place (bluge may still hold the input bytes, e.g. for stored
// fields), returning either term itself or a fresh slice.
//
// Steps, in order:
//   - strip an English possessive 's (', ’ or ＇ followed by s/S), exactly
//     what Lucene's EnglishPossessiveFilter does;
//   - full Unicode case folding (a fast path covers ASCII, Latin-1 and the
//     Cyrillic block, where folding equals simple lowercasing);
//   - drop soft hyphens and zero-width (non-)joiners, which UAX #29 leaves
//     inside words;
//   - in tokens containing Cyrillic letters: remove apostrophes of every kind
//     (the Ukrainian apostrophe only marks a separate pronunciation, so
//     пам'ять, пам’ять, памʼять and a mistyped память must be one term; it
//     also lets Ukrainian пам'ять meet Russian память), remove stress marks,
//     and replace ё with е (Russian text mostly omits the dots);
//   - in other tokens: unify apostrophe variants to U+0027, so don’t and
//     don't are one term;
//   - compose to NFC when combining marks remain (decomposed й, ї, é).
func normalizeTerm(term []byte) []byte {
	term = stripPossessive(term)
	if isASCII(term) {
		return asciiLower(term)
	}

	cyr, slow := false, false
	for i := 0; i < len(term); {
		r, size := utf8.DecodeRune(term[i:])
		i += size
		cyr = cyr || isCyrillicLetter(r)
		slow = slow || !fastFoldable(r)
	}
	src := term
	if slow {
		src = fullFold.Bytes(term)
	}

	out := make([]byte, 0, len(src))
	hasMark := false
	for i := 0; i < len(src); {
		if c := src[i]; c < utf8.RuneSelf {
			i++
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			} else if c == '\'' && cyr {
				continue
			}
			out = append(out, c)
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		i += size
		if !slow {
			r = lowerFast(r)
		}
		switch {
		case r == softHyphen || r == zwnj || r == zwj:
			continue
		case isApostrophe(r):
			if cyr {
				continue
			}
			r = '\''
		case cyr && (r == combiningAcute || r == combiningGrave):
			continue
		case cyr:
			r = foldCyrillicVariant(r)
		}
		if r >= 0x0300 && unicode.Is(unicode.Mn, r) {
			hasMark = true
		}
		out = utf8.AppendRune(out, r)
	}
	if hasMark && !norm.NFC.IsNormal(out) {
		out = norm.NFC.Bytes(out)
		if cyr {
			// Composition can create ё from е + U+0308.
			out = mapRunes(out, foldCyrillicVariant)
		}
	}
	return out
}

// lowerFast lowercases a rune for which fastFoldable holds, with the
// Ukrainian and Russian alphabets handled without table look-ups.
func lowerFast(r rune) rune {
	switch {
	case r >= 0x0430 && r <= 0x045F: // а..я, ѐ..џ: already lowercase
		return r
	case r >= 0x0410 && r <= 0x042F: // А..Я
		return r + 0x20
	case r >= 0x0400 && r <= 0x040F: // Ѐ..Џ, including Є, І, Ї, Ё
		return r + 0x50
	}
	return unicode.ToLower(r)
}

// foldCyrillicVariant maps letters that Russian and Ukrainian writers use
// interchangeably onto one form: ё→е, and ѐ/ѝ (е/и with a precomposed grave
// stress mark) to the plain vowel.
func foldCyrillicVariant(r rune) rune {
	switch r {
	case 'ё', 'ѐ':
		return 'е'
	case 'ѝ':
		return 'и'
	}
	return r
}

// isApostrophe reports the characters used as an apostrophe inside words:
// ASCII ', ’ (U+2019, typographic and Ukrainian standard), ‘ (U+2018), ʼ
// (U+02BC, the Ukrainian orthographic apostrophe), ＇ (U+FF07), ` and ´
// (rewritten by apostropheCharFilter in Cyrillic words).
func isApostrophe(r rune) bool {
	switch r {
	case '\'', '\u2019', '\u2018', '\u02BC', '\uFF07', '`', '\u00B4':
		return true
	}
	return false
}

// stripPossessive removes a trailing 's / 'S written with ', ’ or ＇, the
// same set Lucene's EnglishPossessiveFilter handles. Like Lucene it does not
// distinguish possessives from contractions (she's → she).
func stripPossessive(term []byte) []byte {
	n := len(term)
	if n < 2 || (term[n-1] != 's' && term[n-1] != 'S') {
		return term
	}
	r, size := utf8.DecodeLastRune(term[:n-1])
	if r == '\'' || r == '\u2019' || r == '\uFF07' {
		return term[:n-1-size]
	}
	return term
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiLower lowercases an ASCII term, copying only if something changes.
func asciiLower(b []byte) []byte {
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			out := make([]byte, len(b))
			copy(out, b[:i])
			for j := i; j < len(b); j++ {
				c := b[j]
				if c >= 'A' && c <= 'Z' {
					c += 'a' - 'A'
				}
				out[j] = c
			}
			return out
		}
	}
	return b
}

// fastFoldable reports runes whose full case folding is their simple
// lowercase (checked by TestFastFoldMatchesFullFolding), so lowerFast can
// replace x/text's slower full folding for them: ASCII, Latin-1 letters except ß and µ, combining diacritics
// except U+0345, the Cyrillic block, and general punctuation.
func fastFoldable(r rune) bool {
	switch {
	case r < 0x80:
		return true
	case r >= 0xC0 && r <= 0xFF:
		return r != 0xDF // ß → ss
	case r >= 0x0300 && r <= 0x036F:
		return r != 0x0345 // combining ypogegrammeni folds to ι
	case r >= 0x0400 && r <= 0x04FF:
		return true
	case r >= 0x2000 && r <= 0x206F:
		return true
	case r == 0x02BC || r == 0x00AD || r == 0x00B4 || r == 0xFF07:
		return true
	}
	return false
}

// mapRunes returns b with f applied to every rune.
func mapRunes(b []byte, f func(rune) rune) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		i += size
		out = utf8.AppendRune(out, f(r))
	}
	return out
}
