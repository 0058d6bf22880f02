package textanalysis

import "slices"

// The stop lists are deliberately short. BM25's IDF already discounts
// frequent words; a stop list only has to remove the function words that are
// so frequent they add noise and index size. Long lists (such as the Snowball
// lists bluge ships, 170+ English words) remove words that matter in short
// agent memories ("after", "before", "again", "should").
//
// All entries are in normalised form (lowercase, ё→е, no apostrophes),
// because stop words are removed after normalisation and before stemming.

// englishStopWords is exactly Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET
// (33 words), which Anserini's BEIR BM25 baselines use. Keeping the same set
// keeps document lengths and therefore BM25 length normalisation identical
// to Lucene on English corpora such as SciFact.
var englishStopWords = []string{
	"a", "an", "and", "are", "as", "at", "be", "but", "by",
	"for", "if", "in", "into", "is", "it",
	"no", "not", "of", "on", "or", "such",
	"that", "the", "their", "then", "there", "these",
	"they", "this", "to", "was", "will", "with",
}

// ukrainianStopWords: conjunctions, prepositions, particles, the most common
// demonstratives and personal pronouns of the third person, and forms of
// "to be" — the Ukrainian counterparts of the English set above.
var ukrainianStopWords = []string{
	// conjunctions
	"і", "й", "та", "а", "але", "або", "чи", "що", "щоб", "як", "якщо",
	"коли", "бо", "тому", "також", "теж",
	// prepositions
	"в", "у", "на", "з", "із", "зі", "до", "від", "за", "по", "про",
	"при", "під", "над", "для", "без", "через", "між", "після", "перед",
	// particles
	"не", "ні", "ж", "же", "б", "би", "лише", "тільки", "ще", "вже",
	// demonstratives and pronouns
	"це", "цей", "ця", "ці", "той", "ті", "то", "те",
	"він", "вона", "воно", "вони", "його", "її", "їх",
	// "to be"
	"є", "був", "була", "було", "були", "бути", "буде",
}

// russianStopWords: the Russian counterparts, a short subset of the Snowball
// Russian list (bluge's lang/ru ships the full 150-word list).
var russianStopWords = []string{
	// conjunctions
	"и", "а", "но", "да", "или", "либо", "что", "чтобы", "как", "если",
	"когда", "потому", "так", "тоже", "также",
	// prepositions
	"в", "во", "на", "с", "со", "к", "ко", "у", "о", "об", "обо", "от",
	"из", "за", "по", "до", "для", "при", "про", "под", "над", "без",
	"через", "между", "после", "перед",
	// particles
	"не", "ни", "же", "ли", "бы", "б", "лишь", "только", "уже", "еще",
	// demonstratives and pronouns
	"это", "этот", "эта", "эти", "тот", "та", "те", "то",
	"он", "она", "оно", "они", "его", "ее", "их",
	// "to be"
	"есть", "был", "была", "было", "были", "быть", "будет",
}

// stopWords is the union of the three lists. The scripts are disjoint, so a
// Latin "a" and a Cyrillic "а" never collide.
var stopWords = wordSet(slices.Concat(englishStopWords, ukrainianStopWords, russianStopWords)...)
