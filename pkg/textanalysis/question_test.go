package textanalysis

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A question's framing words — what, did, would, her, ми, который — name
// no content; the query analyzer drops them, and only them.
func TestQueryAnalyzerDropsTheQuestionsFramingWords(t *testing.T) {
	for question, content := range map[string]string{
		"What did Caroline do after the move?":                     "Caroline after move",
		"Would Melanie be more interested in a national park?":     "Melanie more interested national park",
		"How often does Sam get his health checkups?":              "often Sam get health checkups",
		"Which decision did we take about MinIO before the outage": "decision take about MinIO before outage",
		"Що ми вирішили щодо MinIO після аварії?":                  "вирішили щодо MinIO після аварії",
		"Какое решение мы приняли по поводу бэкапов?":              "решение приняли поводу бэкапов",
	} {
		require.Equal(t, Analyze(content), AnalyzeQuery(question), "%q", question)
	}
}

// Words that carry time or order are content in agent memory ("after the
// outage", "again"); the query analyzer keeps them.
func TestQueryAnalyzerKeepsTimeAndOrderWords(t *testing.T) {
	for _, w := range []string{"after", "before", "again", "during", "until", "first", "last", "never", "not"} {
		require.Equal(t, Analyze("outage "+w), AnalyzeQuery("outage "+w), "%q", w)
	}
}

// Documents and phrases keep every word: the question words are dropped
// from a query's optional words only.
func TestIndexAnalyzerKeepsQuestionWords(t *testing.T) {
	require.Equal(t, []string{"what", "did", "you", "do"}, Analyze("What did you do"))
}
