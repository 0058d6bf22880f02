package textanalysis

import "strings"

// Cyrillic stemming.
//
// Why one stemmer for both languages. The analyzer sees single tokens, and
// the same code runs on documents and on queries, so a token's stemmer can
// depend only on the token itself. Routing by letters does not work: a
// Ukrainian paradigm mixes forms with Ukrainian-only letters and forms
// without them (факт, факти / фактів; пам'ять / пам'яті), and so does a
// Russian one with Russian-only letters (результат / результаты). Any
// letter-based routing to two different stemmers splits such paradigms
// unless both stemmers agree on the shared forms. Snowball's Russian stemmer
// is not even self-consistent on a plain noun like "память": it reads -ять as
// an infinitive and returns "памя", while "памяти" gives "памят".
//
// So every Cyrillic token goes through one light suffix stripper, shaped like
// Snowball's Russian algorithm (RV region, longest ending, tidy-up), whose
// ending table is the union of Ukrainian and Russian inflections. Endings
// containing і, ї, є occur only in Ukrainian words and ы, э only in Russian
// ones, so the union rarely misfires in the other language, and
// cross-language cognates often meet (Ukrainian дані and Russian данные both
// give "дан"; пам'ять and память both give "памя").
//
// The algorithm, on a lowercased, ё-free, apostrophe-free word:
//
//  1. Abstract nouns in -ість/-істю (радість, радістю; радості: і/о
//     alternation) are rewritten to the -ост stem of their other cases.
//  2. A reflexive -ся/-сь is removed.
//  3. The longest ending from the table is removed, subject to: it starts in
//     RV (after the first vowel, so the stem keeps a vowel), at least
//     minStem letters remain, and some endings need a particular letter
//     right before them: verb endings that follow a thematic vowel (-ет,
//     -ют, -йте, -вши, -ш) need a vowel, -ем/-ему/-его need a soft or
//     hushing consonant. If the longest candidate fails a condition the next
//     shorter one is tried (слові: -ові would leave two letters, -і does not).
//  4. Tidy-up: a final doubled consonant is undoubled (рішення → рішенн →
//     рішен, like рішень; пам'яттю → памятт → памят), a final ь is removed,
//     and a final т, л or в after a vowel is removed. The last rule is what
//     lets verbs and nouns that a suffix stripper cannot tell apart stay
//     consistent. The infinitive -ти/-ть loses -и/-ь in step 3 and -т here,
//     so читати, читать, читав, читала, читає, читает all give "чита"; the
//     same rule turns every form of результат (результати, результатів) into
//     "результа", and память, памяти, памятью into "памя", where Snowball
//     would read память's -ять as an infinitive ending and split the
//     paradigm. It applies to every stem alike, so it can shorten a
//     paradigm's stem but never split it. Finally a stem ending in
//     -ува/-юва/-ова/-ева (використовува-ти, использова-ть) becomes -у/-ю,
//     the stem of the present tense (використову-є, использу-ет).
//
// Known limits (no dictionary): vowel and consonant alternations (кіт/кота,
// ніч/ночі, рядок/рядка, роблю/робити), and zero-ending genitive plurals
// that look like another ending (проблем reads as пробл+ем).

// minStem is the fewest letters a stem may keep. Two-letter stems conflate
// too much: дата (date) would lose its т and meet дав, дам (gave, will give).
const minStem = 3

// slavicEnding is one inflectional ending. If afterVowel is set or after is
// non-empty, the ending is removed only when the preceding letter is a vowel
// (afterVowel) or one of after; that letter stays in the stem.
type slavicEnding struct {
	suffix     []rune
	afterVowel bool
	after      []rune
}

// slavicEndings is sorted longest first, so the first match is the longest.
// An entry "suffix/cond" applies only when the letter before the suffix is
// one of cond, where V stands for any vowel; that letter stays in the stem.
var slavicEndings = buildEndings(
	// 4 letters
	"иями", "іями",
	// 3 letters: noun and adjective cases. -его/-ему are Russian soft
	// adjective endings (хорошему, синему); restricting them to soft and
	// hushing stems keeps the accusative of систем-а, проблем-а (систему).
	"ами", "ями", "ові", "еві", "єві", "ого", "ому", "его/жшщчнV", "ему/жшщчнV",
	"ими", "іми", "ыми", "иям", "иях", "ием", "ией", "ією", "іям", "іях",
	// 3 letters: verb persons and Ukrainian gerunds
	"ємо", "емо", "єте", "ете", "ешь", "ють", "уть", "єть", "еть",
	"ючи", "учи", "ачи", "ячи", "вши/V", "йте/V",
	// 2 letters. Instrumental -ем follows soft and hushing consonants
	// (вчителем, ключем) and the Russian 1st person plural -ем a vowel
	// (читаем); never т or х, which keeps the genitive plurals систем,
	// схем, тем whole.
	"ам", "ям", "ом", "ем/лрнцчшщжV", "єм", "ах", "ях", "ою", "ею", "єю",
	"ів", "їв", "ов", "ев", "ей", "ій", "ий", "ый", "ой", "ої",
	"ія", "ії", "ію", "ия", "ии", "ию", "ие", "ье", "ья", "ью",
	"ые", "ое", "ее", "ая", "яя", "ую", "юю/н",
	"им", "ім", "ым", "их", "іх", "ых",
	"єш", "еш", "ет/V", "ют/V", "шь/V", "мо/иі",
	// 1 letter
	"а", "я", "о", "е", "є", "у", "ю", "и", "і", "ї", "ы", "й", "ь", "ш/V",
)

// buildEndings parses the table (see slavicEndings for the syntax).
func buildEndings(list ...string) []slavicEnding {
	out := make([]slavicEnding, 0, len(list))
	for _, s := range list {
		suffix, cond, _ := strings.Cut(s, "/")
		e := slavicEnding{suffix: []rune(suffix)}
		for _, r := range cond {
			if r == 'V' {
				e.afterVowel = true
			} else {
				e.after = append(e.after, r)
			}
		}
		out = append(out, e)
	}
	// Stable insertion sort by descending length keeps the table's order
	// within a length, which makes the table easy to read and edit.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j].suffix) > len(out[j-1].suffix); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// admits reports whether the ending may be removed when prev precedes it.
func (e slavicEnding) admits(prev rune) bool {
	if !e.afterVowel && len(e.after) == 0 {
		return true
	}
	if e.afterVowel && isSlavicVowel(prev) {
		return true
	}
	for _, r := range e.after {
		if r == prev {
			return true
		}
	}
	return false
}

var (
	suffixIst  = []rune("ість")
	suffixIstu = []rune("істю")
	stemOst    = []rune("ост")
	reflexSya  = []rune("ся")
	reflexS    = []rune("сь")
)

// isSlavicVowel reports the vowels of Ukrainian and Russian (ё is already
// normalised to е).
func isSlavicVowel(r rune) bool {
	switch r {
	case 'а', 'е', 'и', 'о', 'у', 'ы', 'э', 'ю', 'я', 'і', 'ї', 'є':
		return true
	}
	return false
}

// stemSlavic stems a normalised Cyrillic word. It may return a prefix of w
// or a new slice; it does not modify w's elements.
func stemSlavic(w []rune) []rune {
	if len(w) < minStem {
		return w
	}
	rv := 0
	for rv < len(w) && !isSlavicVowel(w[rv]) {
		rv++
	}
	if rv == len(w) {
		return w // no vowel: abbreviation or consonant cluster, keep it
	}
	rv++ // RV starts after the first vowel

	// Step 1: -ість/-істю → -ост.
	if n := len(w) - len(suffixIst); n >= 1 && (hasRuneSuffix(w, suffixIst) || hasRuneSuffix(w, suffixIstu)) {
		out := make([]rune, 0, n+len(stemOst))
		return append(append(out, w[:n]...), stemOst...)
	}

	// Step 2: reflexive.
	if n := len(w) - 2; n >= rv && n >= minStem && (hasRuneSuffix(w, reflexSya) || hasRuneSuffix(w, reflexS)) {
		w = w[:n]
	}

	// Step 3: the longest admissible inflectional ending.
	for _, e := range slavicEndings {
		n := len(w) - len(e.suffix)
		if n < rv || n < minStem || !hasRuneSuffix(w, e.suffix) {
			continue
		}
		if !e.admits(w[n-1]) {
			continue
		}
		w = w[:n]
		break
	}

	// Step 4: tidy-up.
	if n := len(w); n > minStem && w[n-1] == w[n-2] && !isSlavicVowel(w[n-1]) && w[n-1] != 'ь' {
		w = w[:n-1]
	}
	if n := len(w); n > minStem && w[n-1] == 'ь' {
		w = w[:n-1]
	}
	if n := len(w); n > minStem && (w[n-1] == 'т' || w[n-1] == 'л' || w[n-1] == 'в') && isSlavicVowel(w[n-2]) {
		w = w[:n-1]
	}
	// -ува-/-ова- verbs use -у-/-ю- in the present tense: використовувати,
	// використовував vs використовує; использовать vs использует.
	if n := len(w); n-2 >= minStem && w[n-1] == 'а' && w[n-2] == 'в' {
		switch w[n-3] {
		case 'у', 'о':
			return append(w[:n-3:n-3], 'у')
		case 'ю', 'е':
			return append(w[:n-3:n-3], 'ю')
		}
	}
	return w
}

func hasRuneSuffix(w, suffix []rune) bool {
	if len(suffix) > len(w) {
		return false
	}
	off := len(w) - len(suffix)
	for i, r := range suffix {
		if w[off+i] != r {
			return false
		}
	}
	return true
}
