package temporalgraph

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxSlugBytes bounds entity ids so they stay usable as map keys, URL path
// segments and file names.
const maxSlugBytes = 64

// Slug returns the entity id of label, so that spelling variants of one name
// ("MinIO", "minio", "Mínio ") resolve to one node.
//
// Steps: Unicode NFKD; combining marks are dropped after a non-Cyrillic base
// (Latin diacritics are spelling noise) but kept after a Cyrillic base and
// recomposed with NFC, because in Ukrainian "й" and "ї" are letters of their
// own, not accented "и"/"і" — stripping them would merge different words; any
// mark that does not recompose (stress accents) is then dropped. The result
// is lower-cased; letters (any script) and digits are kept; apostrophes
// (', ’, ʼ, ‘, `) are dropped without a separator, so "Пам'ять" stays one
// word; every other run of characters becomes one '-'. The id is trimmed of
// '-' and cut to at most 64 bytes on a rune boundary. A label with no letters
// or digits yields "" (callers skip such entities).
//
// Slug is idempotent: Slug(Slug(x)) == Slug(x), so ids can be passed
// wherever labels are accepted.
func Slug(label string) string {
	if isASCII(label) {
		return slugASCII(label)
	}
	return slugUnicode(label)
}

// slugUnicode is Slug for any label.
func slugUnicode(label string) string {
	s := stripMarks(label)
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		case isApostrophe(r):
			// Dropped: an apostrophe is part of the word in Ukrainian
			// (and English "agent's"), not a word boundary.
		default:
			dash = true
		}
	}
	out := b.String()
	if len(out) > maxSlugBytes {
		cut := maxSlugBytes
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut]
	}
	return strings.Trim(out, "-")
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// slugASCII is Slug for ASCII labels, most of them: normalisation changes
// no ASCII text, and letters, digits and case are the ASCII ones, so it
// needs neither the Unicode tables nor a second pass.
func slugASCII(label string) string {
	b := make([]byte, 0, min(len(label), maxSlugBytes))
	dash := false
	for i := range len(label) {
		c := label[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
			fallthrough
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			if len(b) >= maxSlugBytes {
				break
			}
			if dash && len(b) > 0 {
				b = append(b, '-')
				if len(b) == maxSlugBytes {
					break
				}
			}
			dash = false
			b = append(b, c)
		case c == '\'' || c == '`':
		default:
			dash = true
		}
	}
	return strings.Trim(string(b), "-")
}

// stripMarks applies the diacritic rules of Slug (see there).
func stripMarks(s string) string {
	d := norm.NFKD.String(s)
	var b strings.Builder
	var base rune
	for _, r := range d {
		if unicode.Is(unicode.Mn, r) {
			if unicode.Is(unicode.Cyrillic, base) {
				b.WriteRune(r)
			}
			continue
		}
		base = r
		b.WriteRune(r)
	}
	c := norm.NFC.String(b.String())
	// Marks that did not recompose (e.g. a stress accent over "а").
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, c)
}

func isApostrophe(r rune) bool {
	switch r {
	case '\'', '’', 'ʼ', '‘', '`':
		return true
	}
	return false
}
