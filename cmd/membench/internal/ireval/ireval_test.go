package ireval

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

const eps = 1e-12

// testQrels and testRun are small enough to compute every number by hand;
// the expected values below spell out the arithmetic.
var testQrels = Qrels{
	// Binary relevance, one judged non-relevant doc.
	"q1": {"d1": 1, "d2": 1, "d3": 0},
	// Graded relevance.
	"q2": {"a": 3, "b": 2, "c": 1},
	// Tied scores: trec_eval ranks ties by doc id descending.
	"q3": {"d10": 1},
	// Judged, but the run has nothing for it: scores 0 and still counts (-c).
	"q4": {"x": 1},
	// Only non-relevant judgements: nothing to find, scores 0, counts.
	"q5": {"n": 0},
}

var testRun = Run{
	// Order of hits in the slice is irrelevant; only scores rank.
	"q1": {{"d3", 0.6}, {"d1", 0.9}, {"d2", 0.7}, {"dx", 0.8}},
	"q2": {{"b", 0.5}, {"z", 1.0}, {"a", 2.0}, {"c", 3.0}},
	"q3": {{"d2", 1.0}, {"d10", 1.0}, {"d9", 1.0}},
	"q5": {{"n", 1}},
	// Not in qrels: ignored.
	"q9": {{"d1", 1}},
}

func TestPerQueryNDCG(t *testing.T) {
	got := PerQueryNDCG(testQrels, testRun, 10)
	require.Len(t, got, 5, "exactly the qrels' queries")

	// q1 ranking: d1(rel 1) dx d2(rel 1) d3(rel 0); k=10 > 4 hits.
	// DCG = 1/log2(2) + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3).
	require.InDelta(t, 1.5/(1+1/math.Log2(3)), got["q1"], eps)
	require.InDelta(t, 0.9197207891481876, got["q1"], 1e-15)

	// q2 ranking: c(1) a(3) z b(2). DCG = 1 + 3/log2(3) + 2/log2(5);
	// IDCG from a(3) b(2) c(1) = 3 + 2/log2(3) + 1/log2(4).
	idcg := 3 + 2/math.Log2(3) + 1.0/2
	require.InDelta(t, (1+3/math.Log2(3)+2/math.Log2(5))/idcg, got["q2"], eps)
	require.InDelta(t, 0.7883773914853737, got["q2"], 1e-15)

	// q3: all tied, ranked d9 > d2 > d10 (byte order, descending), so the
	// relevant d10 is at rank 3: 1/log2(4) = 0.5.
	require.InDelta(t, 0.5, got["q3"], eps)

	require.Zero(t, got["q4"])
	require.Zero(t, got["q5"])
}

func TestNDCGCutoff(t *testing.T) {
	// q2 at k=3: DCG = 1 + 3/log2(3) (b at rank 4 is cut); the ideal is cut
	// at 3 as well.
	got := PerQueryNDCG(testQrels, testRun, 3)
	require.InDelta(t, (1+3/math.Log2(3))/(3+2/math.Log2(3)+0.5), got["q2"], eps)
	require.InDelta(t, 0.6074915180456525, got["q2"], 1e-15)

	// At k=1 the ideal is one doc of the top grade: q2's c(1) vs a(3).
	require.InDelta(t, 1.0/3, PerQueryNDCG(testQrels, testRun, 1)["q2"], eps)

	// The ideal is cut at k even when there are more relevant docs than k:
	// q1 at k=1 retrieves d1 first, so nDCG@1 = 1.
	require.InDelta(t, 1.0, PerQueryNDCG(testQrels, testRun, 1)["q1"], eps)

	// k <= 0: no cutoff, same as a cutoff beyond the run.
	require.Equal(t, PerQueryNDCG(testQrels, testRun, 1000), PerQueryNDCG(testQrels, testRun, 0))
}

func TestNDCGMean(t *testing.T) {
	want := (0.9197207891481876 + 0.7883773914853737 + 0.5 + 0 + 0) / 5
	require.InDelta(t, want, NDCG(testQrels, testRun, 10), 1e-15)
	// Deterministic to the last bit despite map iteration order.
	for i := 0; i < 20; i++ {
		require.Equal(t, NDCG(testQrels, testRun, 10), NDCG(testQrels, testRun, 10))
	}
	require.Zero(t, NDCG(Qrels{}, testRun, 10), "no queries: 0, not NaN")
	require.Zero(t, NDCG(testQrels, nil, 10), "empty run: every query scores 0")
}

func TestRecall(t *testing.T) {
	got := PerQueryRecall(testQrels, testRun, 100)
	require.Equal(t, map[string]float64{"q1": 1, "q2": 1, "q3": 1, "q4": 0, "q5": 0}, got)

	got = PerQueryRecall(testQrels, testRun, 2)
	require.InDelta(t, 0.5, got["q1"], eps)  // d1, dx: 1 of 2
	require.InDelta(t, 2./3, got["q2"], eps) // c, a: 2 of 3
	require.Zero(t, got["q3"])               // d9, d2: d10 is third

	require.InDelta(t, (0.5+2./3)/5, Recall(testQrels, testRun, 2), eps)
	require.InDelta(t, 3./5, Recall(testQrels, testRun, 100), eps)
}

func TestRanked(t *testing.T) {
	hits := []Hit{{"b", 1}, {"a", 2}, {"c", 1}, {"a", 0.5}, {"nan", math.NaN()}, {"d", 1}}
	orig := append([]Hit(nil), hits...)
	got := Ranked(hits, 0)
	ids := make([]string, len(got))
	for i, h := range got {
		ids[i] = h.DocID
	}
	// a keeps its best score only; ties d > c > b; NaN last.
	require.Equal(t, []string{"a", "d", "c", "b", "nan"}, ids)
	require.Equal(t, 2.0, got[0].Score)
	require.Equal(t, orig[:4], hits[:4], "input not modified")
	require.Len(t, Ranked(hits, 2), 2)
	require.Empty(t, Ranked(nil, 10))
}

func TestPerfectRun(t *testing.T) {
	run := perfectRun(testQrels)
	ndcg := PerQueryNDCG(testQrels, run, 10)
	rec := PerQueryRecall(testQrels, run, 100)
	for q, rels := range testQrels {
		hasRel := false
		for _, r := range rels {
			hasRel = hasRel || r > 0
		}
		if hasRel {
			require.InDelta(t, 1, ndcg[q], eps, q)
			require.InDelta(t, 1, rec[q], eps, q)
		}
	}
}

// perfectRun ranks every judged doc by its relevance grade.
func perfectRun(qrels Qrels) Run {
	run := Run{}
	for q, rels := range qrels {
		for d, r := range rels {
			run[q] = append(run[q], Hit{DocID: d, Score: float64(r)})
		}
	}
	return run
}
