package ireval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestLoadBEIR(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("слово ", 40000) // ~480 KB: over bufio's 64 KB default
	writeFile(t, filepath.Join(dir, "corpus.jsonl"),
		"\uFEFF"+`{"_id": "4983", "title": "Microstructural development", "text": "Alterations of the architecture.", "metadata": {"x": [1, 2]}}`+"\r\n"+
			`{"_id": 17, "title": "", "text": "numeric id"}`+"\n"+
			"\n"+
			`{"_id": "long", "title": "Довгий", "text": "`+long+`"}`+"\n")
	writeFile(t, filepath.Join(dir, "queries.jsonl"),
		`{"_id": "1", "text": "0-dimensional biomaterials show inductive properties.", "metadata": {}}`+"\n"+
			`{"_id": "3", "text": "1,000 genomes project"}`+"\n")
	writeFile(t, filepath.Join(dir, "qrels", "test.tsv"),
		"query-id\tcorpus-id\tscore\n1\t4983\t1\n1\t17\t0\r\n3\tlong\t2\n")

	corpus, queries, qrels, err := LoadBEIR(dir)
	require.NoError(t, err)
	require.Equal(t, []Doc{
		{ID: "4983", Title: "Microstructural development", Text: "Alterations of the architecture."},
		{ID: "17", Title: "", Text: "numeric id"},
		{ID: "long", Title: "Довгий", Text: long},
	}, corpus)
	require.Equal(t, map[string]string{"1": "0-dimensional biomaterials show inductive properties.", "3": "1,000 genomes project"}, queries)
	require.Equal(t, Qrels{"1": {"4983": 1, "17": 0}, "3": {"long": 2}}, qrels)
}

func TestLoadQrelsTREC(t *testing.T) {
	path := filepath.Join(t.TempDir(), "qrels.txt")
	writeFile(t, path, "1 0 31715818 1\n3  0\t14717500 2.0\n5 0 x 0\n")
	qrels, err := LoadQrels(path)
	require.NoError(t, err)
	require.Equal(t, Qrels{"1": {"31715818": 1}, "3": {"14717500": 2}, "5": {"x": 0}}, qrels)
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, file, content, want string
		load                      func(string) error
	}{
		{"bad json", "c.jsonl", "{\"_id\": \"1\", \"text\": \"a\"}\n{broken\n", "c.jsonl:2:", loadCorpus},
		{"missing id", "c.jsonl", `{"text": "a"}` + "\n", "missing _id", loadCorpus},
		{"duplicate doc", "c.jsonl", `{"_id": "1"}` + "\n" + `{"_id": "1"}` + "\n", `c.jsonl:2: duplicate _id "1"`, loadCorpus},
		{"duplicate query", "q.jsonl", `{"_id": "1"}` + "\n" + `{"_id": "1"}` + "\n", "duplicate _id", loadQueries},
		{"bad rel", "r.tsv", "query-id\tcorpus-id\tscore\n1\t2\tyes\n", `r.tsv:2: bad relevance "yes"`, loadQrels},
		{"fractional rel", "r.tsv", "1\t2\t0.5\n", "bad relevance", loadQrels},
		{"bad first line", "r.tsv", "1\t2\tx\n", "bad relevance", loadQrels},
		{"field count", "r.tsv", "1 2\n", "want 3 (BEIR) or 4 (TREC) fields, got 2", loadQrels},
		{"duplicate judgement", "r.tsv", "1\t2\t1\n1\t2\t0\n", "duplicate judgement", loadQrels},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			writeFile(t, path, tc.content)
			err := tc.load(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	_, _, _, err := LoadBEIR(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func loadCorpus(p string) error  { _, err := LoadCorpus(p); return err }
func loadQueries(p string) error { _, err := LoadQueries(p); return err }
func loadQrels(p string) error   { _, err := LoadQrels(p); return err }

// TestSciFact checks the loaders and the metrics against the real BEIR
// SciFact test split when the shared data directory is present.
func TestSciFact(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "data", "scifact")
	if _, err := os.Stat(filepath.Join(dir, "corpus.jsonl")); err != nil {
		t.Skipf("SciFact data not available at %s: %v", dir, err)
	}
	corpus, queries, qrels, err := LoadBEIR(dir)
	require.NoError(t, err)
	require.Len(t, corpus, 5183)
	require.Len(t, qrels, 300, "test queries with judgements")

	docs := make(map[string]bool, len(corpus))
	for _, d := range corpus {
		require.NotEmpty(t, d.ID)
		docs[d.ID] = true
	}
	judgements := 0
	for q, rels := range qrels {
		require.NotEmpty(t, queries[q], "query %s has text", q)
		for d, r := range rels {
			require.True(t, docs[d], "judged doc %s of query %s is in the corpus", d, q)
			require.Positive(t, r)
			judgements++
		}
	}
	require.Equal(t, 339, judgements)

	// The TREC-format copy of the qrels, if shipped, says the same.
	if trec := filepath.Join(dir, "qrels", "test.trec.txt"); fileExists(trec) {
		other, err := LoadQrels(trec)
		require.NoError(t, err)
		require.Equal(t, qrels, other)
	}

	perfect := perfectRun(qrels)
	require.InDelta(t, 1, NDCG(qrels, perfect, 10), 1e-12)
	require.InDelta(t, 1, Recall(qrels, perfect, 100), 1e-12)
	require.Zero(t, NDCG(qrels, Run{}, 10))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
