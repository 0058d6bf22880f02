package textanalysis

import (
	"context"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/blugelabs/bluge"
	"github.com/blugelabs/bluge/analysis"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/cases"
)

// single analyses one word and requires exactly one term.
func single(t *testing.T, word string) string {
	t.Helper()
	terms := Analyze(word)
	require.Len(t, terms, 1, "word %q gave terms %q", word, terms)
	return terms[0]
}

// requireSameTerm asserts that every form analyses to one and the same term.
func requireSameTerm(t *testing.T, forms ...string) {
	t.Helper()
	want := single(t, forms[0])
	for _, f := range forms[1:] {
		require.Equal(t, want, single(t, f), "%q and %q should share a term", forms[0], f)
	}
}

func TestEnglishInflectionsShareTerm(t *testing.T) {
	groups := map[string][]string{
		"study":    {"study", "studies", "studied", "Studying"},
		"run":      {"run", "runs", "running"},
		"memory":   {"memory", "memories", "Memories"},
		"activate": {"activate", "activated", "activates", "activation"},
		"protein":  {"protein", "proteins"},
		"cell":     {"cell", "cells", "Cells"},
	}
	for name, forms := range groups {
		t.Run(name, func(t *testing.T) { requireSameTerm(t, forms...) })
	}
}

func TestPossessive(t *testing.T) {
	for _, w := range []string{"agent's", "Agent’s", "AGENT'S", "agent＇s", "agents'", "agents"} {
		require.Equal(t, []string{"agent"}, Analyze(w), w)
	}
	// Only a final 's goes; other apostrophes are unified to ' and kept, as
	// Lucene's StandardTokenizer keeps them.
	require.Equal(t, []string{"don't"}, Analyze("don’t"))
	require.Equal(t, []string{"o'neil"}, Analyze("O'Neil's"))
}

func TestLuceneStopWords(t *testing.T) {
	require.Len(t, englishStopWords, 33, "Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET has 33 words")
	text := strings.Join(englishStopWords, " ")
	require.Empty(t, Analyze(text))
	require.Empty(t, Analyze(strings.ToUpper(text)))
	// Words in the long Snowball list (bluge's lang/en) but not in Lucene's
	// set must stay, or BM25 document lengths diverge from Lucene.
	require.Equal(t, []string{"after", "again", "should", "were", "i", "we"},
		Analyze("after again should were I we"))
}

func TestLucenePorterExamples(t *testing.T) {
	// Outputs of Lucene's PorterStemFilter (Porter's reference algorithm).
	cases := map[string]string{
		"running":        "run",
		"studies":        "studi",
		"study":          "studi",
		"generalization": "gener",
		"activated":      "activ",
		"memories":       "memori",
		"caresses":       "caress",
		"ponies":         "poni",
		"ties":           "ti",
		"agreed":         "agre",
		"hopping":        "hop",
		"filing":         "file",
		"happy":          "happi",
		"sky":            "sky",
		"relational":     "relat",
		"conditional":    "condit",
		"hopefulness":    "hope",
		"adjustable":     "adjust",
		"effective":      "effect",
		"abilities":      "abil",
		// The reference implementation's departures, which Lucene keeps
		// and the Snowball "porter" stemmer does not.
		"archaeology": "archaeolog",
		"sensibility": "sensibl",
		// Words of at most two letters are not stemmed ("us" stays "us").
		"us": "us",
	}
	for in, want := range cases {
		require.Equal(t, []string{want}, Analyze(in), in)
	}
}

func TestUkrainianInflectionsShareTerm(t *testing.T) {
	groups := map[string][]string{
		"пам'ять":    {"пам'ять", "пам’яті", "пам'яттю", "памʼять", "ПАМ'ЯТІ"},
		"факт":       {"факт", "факти", "фактів", "фактами", "фактом", "факту"},
		"рішення":    {"рішення", "рішенням", "рішень", "рішенні", "рішеннями"},
		"агент":      {"агент", "агента", "агентові", "агентів", "агентом", "агенти"},
		"збереження": {"збереження", "збереженням", "збереженні", "збережень"},
		"зберігати":  {"зберігати", "зберігає", "зберігають", "зберігав", "зберігала", "зберігається"},
		"дані":       {"дані", "даних", "даними"},
		"можливість": {"можливість", "можливості", "можливістю", "можливостей"},
		"історія":    {"історія", "історії", "історію", "історією", "історій"},
		"питання":    {"питання", "питань", "питанням"},
		"модель":     {"модель", "моделі", "моделлю", "моделей"},
		"новий":      {"новий", "нова", "нове", "нові", "нового", "новому", "новими", "нової"},
		"система":    {"система", "системи", "систему", "системою", "систем"},
		"результат":  {"результат", "результати", "результатів", "результатами"},
		"користувач": {"користувач", "користувача", "користувачі", "користувачів", "користувачем"},
		"працювати":  {"працювати", "працює", "працюють", "працював"},
	}
	for name, forms := range groups {
		t.Run(name, func(t *testing.T) { requireSameTerm(t, forms...) })
	}
}

func TestRussianInflectionsShareTerm(t *testing.T) {
	groups := map[string][]string{
		// Snowball's Russian stemmer splits this one: память→памя, памяти→памят.
		"память":       {"память", "памяти", "памятью"},
		"решение":      {"решение", "решения", "решений", "решением", "решениях"},
		"агент":        {"агент", "агента", "агентов", "агентам", "агенты"},
		"данные":       {"данные", "данных", "данными"},
		"возможность":  {"возможность", "возможности", "возможностью"},
		"хороший":      {"хороший", "хорошая", "хорошего", "хорошему", "хороших"},
		"читать":       {"читать", "читает", "читают", "читал", "читала"},
		"использовать": {"использовать", "использует", "используют", "использовал"},
	}
	for name, forms := range groups {
		t.Run(name, func(t *testing.T) { requireSameTerm(t, forms...) })
	}
}

func TestCrossLanguageCognates(t *testing.T) {
	// Dropping the apostrophe and sharing one stemmer lets closely spelled
	// Ukrainian and Russian words meet.
	requireSameTerm(t, "пам'ять", "память", "пам'яті", "памяти")
	requireSameTerm(t, "дані", "данные")
	requireSameTerm(t, "агентів", "агентов")
}

func TestApostropheVariants(t *testing.T) {
	forms := []string{
		"пам'ять", // U+0027
		"пам’ять", // U+2019
		"памʼять", // U+02BC
		"пам‘ять", // U+2018
		"пам＇ять", // U+FF07
		"пам`ять", // grave accent typed as apostrophe
		"пам´ять", // acute accent typed as apostrophe
		"память",  // apostrophe omitted
	}
	requireSameTerm(t, forms...)
	requireSameTerm(t, "м'ясо", "м’ясо", "мʼясо")
	requireSameTerm(t, "п'ять", "п’ять")
	// Outside Cyrillic words a backtick is Markdown code quoting: it still
	// splits, and the code stays searchable.
	require.Equal(t, []string{"run_abc123", "ok"}, Analyze("`run_abc123` ok"))
}

func TestCharFilterKeepsOffsets(t *testing.T) {
	in := []byte("слово пам`ять і пам´ять")
	orig := append([]byte(nil), in...)
	toks := NewAnalyzer().Analyze(in)
	require.Equal(t, orig, in, "input must not be modified")
	require.Len(t, toks, 3)
	require.Equal(t, "пам`ять", string(orig[toks[1].Start:toks[1].End]))
	require.Equal(t, "пам´ять", string(orig[toks[2].Start:toks[2].End]))
}

func TestYoAndStressMarks(t *testing.T) {
	requireSameTerm(t, "ёлка", "елка", "Ёлка", "ЕЛКА")
	requireSameTerm(t, "за\u0301мок", "замо\u0301к", "замок", "ЗА\u0301МОК")
	requireSameTerm(t, "моло\u0301ко", "молоко")
	requireSameTerm(t, "все\u0300", "все\u0301", "всё", "все")
	// Decomposed й and ї (NFD input) equal the precomposed letters, and the
	// breve/diaeresis are not mistaken for stress marks.
	requireSameTerm(t, "мрії", "мрі\u0456\u0308", "МРІ\u0406\u0308")
	require.Equal(t, Analyze("чайник"), Analyze("чаи\u0306ник"))
	require.Equal(t, Analyze("ёж"), Analyze("е\u0308ж"))
}

func TestCaseFolding(t *testing.T) {
	require.Equal(t, Analyze("straße"), Analyze("STRASSE"))
	require.Equal(t, Analyze("ﬁle"), Analyze("file"))
	require.Equal(t, Analyze("ΣΊΣΥΦΟΣ"), Analyze("σίσυφος"))
	require.Equal(t, Analyze("ҐАНОК"), Analyze("ґанок"))
	require.Equal(t, Analyze("ЇЖАК"), Analyze("їжак"))
}

func TestFastFoldMatchesFullFolding(t *testing.T) {
	folder := cases.Fold()
	for r := rune(0); r <= 0x2FFFF; r++ {
		if !fastFoldable(r) || !utf8.ValidRune(r) {
			continue
		}
		require.Equal(t, folder.String(string(r)), string(unicode.ToLower(r)), "rune %U", r)
	}
}

func TestMixedLanguageSentence(t *testing.T) {
	text := "The agent's memories: агент зберігає факти про рішення користувача в пам’яті; " +
		"агент хранит факты о решениях в памяти (run_abc123, v1.2)."
	require.Equal(t, []string{
		"agent", "memori",
		"агент", "зберіга", "факт", "рішен", "користувач", "памя",
		"агент", "храни", "факт", "решен", "памя",
		"run_abc123", "v1.2",
	}, Analyze(text))
}

func TestTokensWithDigitsUnchanged(t *testing.T) {
	require.Equal(t, []string{"run_abc123"}, Analyze("run_abc123"))
	require.Equal(t, []string{"v1.2"}, Analyze("v1.2"))
	require.Equal(t, []string{"v2.10.3"}, Analyze("V2.10.3"))
	require.Equal(t, []string{"2026", "02", "17"}, Analyze("2026-02-17"))
	// Porter would turn 1990s into 1990 and cd4s into cd4; identifiers
	// must stay verbatim instead.
	require.Equal(t, []string{"1990s", "cd4s"}, Analyze("1990s CD4s"))
	require.Equal(t, []string{"задача42", "x86_64"}, Analyze("задача42 x86_64"))
	// A query for the date finds the same terms in the same order.
	require.Equal(t, Analyze("due 2026-02-17"), []string{"due", "2026", "02", "17"})
}

func TestMixedScriptTokenNotStemmed(t *testing.T) {
	require.Equal(t, []string{"blugeом"}, Analyze("Bluge'ом"))
}

func TestDeterminism(t *testing.T) {
	text := benchText
	want := Analyze(text)
	require.NotEmpty(t, want)
	fresh := NewAnalyzer()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if got := Analyze(text); !equal(got, want) {
					t.Errorf("run %d: terms differ", j)
					return
				}
				if got := terms(fresh.Analyze([]byte(text))); !equal(got, want) {
					t.Errorf("fresh analyzer run %d: terms differ", j)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestEmptyInput(t *testing.T) {
	for _, in := range []string{"", "   \n\t", "!!! --- ...", "the and of", "і та в на", "и в на"} {
		require.Empty(t, Analyze(in), "%q", in)
	}
	require.Empty(t, NewAnalyzer().Analyze(nil))
}

func TestStopWordsKeepPositionGaps(t *testing.T) {
	toks := NewAnalyzer().Analyze([]byte("memory of the agent"))
	require.Len(t, toks, 2)
	require.Equal(t, 1, toks[0].PositionIncr)
	require.Equal(t, 3, toks[1].PositionIncr, "two removed stop words leave a gap")
}

func TestStopListsAreNormalised(t *testing.T) {
	// Entries are compared after normalisation, so each must already be in
	// normalised form and must not be changed by it.
	for w := range stopWords {
		require.Equal(t, w, string(normalizeTerm([]byte(w))), w)
	}
	require.Empty(t, Analyze("ЩО Її ЕСТЬ ЕЩЁ еще ЕЁ"))
}

func TestAnalyzerDoesNotModifyInput(t *testing.T) {
	in := []byte("Agent's MEMORIES Пам’ять ЁЛКА за\u0301мок Straße")
	orig := append([]byte(nil), in...)
	NewAnalyzer().Analyze(in)
	require.Equal(t, orig, in)
}

// TestBlugeIndexAndQuery checks the analyzer in its real role: the same
// analyzer on the field and on the query lets inflected forms match.
func TestBlugeIndexAndQuery(t *testing.T) {
	a := NewAnalyzer()
	w, err := bluge.OpenWriter(bluge.InMemoryOnlyConfig())
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	docs := map[string]string{
		"uk": "Агент зберігає факти про рішення користувача в пам'яті.",
		"ru": "Агент хранит факты о решениях пользователя в памяти.",
		"en": "The agent's memories store studies of running systems.",
	}
	for id, text := range docs {
		doc := bluge.NewDocument(id).AddField(bluge.NewTextField("body", text).WithAnalyzer(a))
		require.NoError(t, w.Update(doc.ID(), doc))
	}
	r, err := w.Reader()
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()

	search := func(q string) []string {
		query := bluge.NewMatchQuery(q).SetField("body").SetAnalyzer(a)
		it, err := r.Search(context.Background(), bluge.NewTopNSearch(10, query))
		require.NoError(t, err)
		var ids []string
		for m, err := it.Next(); m != nil || err != nil; m, err = it.Next() {
			require.NoError(t, err)
			require.NoError(t, m.VisitStoredFields(func(field string, value []byte) bool {
				if field == "_id" {
					ids = append(ids, string(value))
				}
				return true
			}))
		}
		return ids
	}
	require.Equal(t, []string{"uk"}, search("рішенням"))
	require.ElementsMatch(t, []string{"uk", "ru"}, search("фактів"), "факти and факты share факт")
	require.Equal(t, []string{"uk"}, search("зберігати"))
	require.Equal(t, []string{"ru"}, search("решение"))
	require.ElementsMatch(t, []string{"uk", "ru"}, search("пам’ять"))
	require.Equal(t, []string{"en"}, search("memory study run"))
	require.ElementsMatch(t, []string{"uk", "ru", "en"}, search("агентів agent"))
}

func terms(ts analysis.TokenStream) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t.Term)
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{benchText, "пам'ять", "agent's", "ё\u0301", "'s", "\u0301", "ів", "ість", "a\u0345"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Analyze(s)
		for _, term := range got {
			if term == "" || !utf8.ValidString(term) && utf8.ValidString(s) {
				t.Fatalf("bad term %q from %q", term, s)
			}
		}
		if again := Analyze(s); !equal(got, again) {
			t.Fatalf("not deterministic for %q", s)
		}
	})
}
