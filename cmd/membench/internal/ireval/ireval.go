// Package ireval evaluates retrieval runs with the semantics of trec_eval
// (`trec_eval -c -m ndcg_cut.10 -m recall.100`) and loads BEIR data sets,
// so search-quality numbers measured here (e.g. on BEIR SciFact) are
// directly comparable with published BEIR baselines.
//
// The trec_eval details that move numbers, reproduced on purpose:
//
//   - Only queries present in the qrels are evaluated, and each of them
//     counts in the mean even if the run has no hits for it (it scores 0):
//     that is the -c flag. Queries only in the run are ignored.
//   - A query's hits are ranked by score descending, ties broken by doc id
//     in descending lexicographic (byte) order, as trec_eval sorts; the
//     order hits are given in does not matter. A doc id listed twice counts
//     once, at its best rank (trec_eval would reject such a run).
//   - nDCG@k uses the relevance value as the gain and a log2(rank+1)
//     discount: DCG@k = Σ_{i=1..k} rel_i / log2(i+1). The ideal DCG@k ranks
//     all judged docs with rel > 0 by relevance. Judgements <= 0 give no
//     gain. A query without relevant docs scores 0.
//   - Recall@k = relevant docs (rel > 0) in the top k / all relevant docs
//     of the query; 0 when it has none.
//   - Means are plain arithmetic means over the qrels' queries, summed in
//     query-id order so the result is bit-for-bit reproducible.
//
// Scores are compared as float64. trec_eval compares the scores printed in
// a run file, so a run written with few decimals can have ties (and hence a
// different order) that the in-memory run does not.
package ireval

import (
	"math"
	"sort"
)

// Qrels are relevance judgements: query id -> doc id -> graded relevance;
// a value > 0 means relevant.
type Qrels map[string]map[string]int

// Run is a system's output: query id -> hits in any order.
type Run map[string][]Hit

// Hit is one retrieved document and its retrieval score.
type Hit struct {
	DocID string
	Score float64
}

// Doc is one document of a BEIR corpus.
type Doc struct {
	ID, Title, Text string
}

// Ranked returns a query's hits in trec_eval rank order (score descending,
// then doc id descending; duplicate doc ids dropped after their best rank),
// truncated to k when k > 0. It is exported so that callers can print or
// write a run in exactly the order it is scored. hits is not modified.
func Ranked(hits []Hit, k int) []Hit {
	out := append([]Hit(nil), hits...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Score != b.Score {
			return higher(a.Score, b.Score)
		}
		return a.DocID > b.DocID
	})
	seen := make(map[string]bool, len(out))
	n := 0
	for _, h := range out {
		if seen[h.DocID] {
			continue
		}
		seen[h.DocID] = true
		out[n] = h
		n++
		if k > 0 && n == k {
			break
		}
	}
	return out[:n]
}

// higher orders scores descending with NaN last, so a broken scorer cannot
// make the sort inconsistent (NaN compares false with everything).
func higher(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return !math.IsNaN(a) && math.IsNaN(b)
	}
	return a > b
}

// NDCG returns the mean nDCG@k (trec_eval ndcg_cut.k) over the queries in
// qrels. k <= 0 means no cutoff (trec_eval's plain ndcg).
func NDCG(qrels Qrels, run Run, k int) float64 {
	return mean(PerQueryNDCG(qrels, run, k))
}

// Recall returns the mean Recall@k (trec_eval recall.k) over the queries in
// qrels. k <= 0 means no cutoff.
func Recall(qrels Qrels, run Run, k int) float64 {
	return mean(PerQueryRecall(qrels, run, k))
}

// PerQueryNDCG returns nDCG@k for every query in qrels, for per-query
// analysis and significance tests; NDCG is its mean.
func PerQueryNDCG(qrels Qrels, run Run, k int) map[string]float64 {
	out := make(map[string]float64, len(qrels))
	for q, rels := range qrels {
		out[q] = ndcg(rels, Ranked(run[q], k), k)
	}
	return out
}

// PerQueryRecall returns Recall@k for every query in qrels; Recall is its
// mean.
func PerQueryRecall(qrels Qrels, run Run, k int) map[string]float64 {
	out := make(map[string]float64, len(qrels))
	for q, rels := range qrels {
		out[q] = recall(rels, Ranked(run[q], k))
	}
	return out
}

func ndcg(rels map[string]int, ranked []Hit, k int) float64 {
	var gains []int
	for _, r := range rels {
		if r > 0 {
			gains = append(gains, r)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(gains)))
	if k > 0 && len(gains) > k {
		gains = gains[:k]
	}
	ideal := 0.0
	for i, g := range gains {
		ideal += float64(g) / math.Log2(float64(i+2))
	}
	if ideal == 0 {
		return 0
	}
	dcg := 0.0
	for i, h := range ranked {
		if g := rels[h.DocID]; g > 0 {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
	}
	return dcg / ideal
}

func recall(rels map[string]int, ranked []Hit) float64 {
	total := 0
	for _, r := range rels {
		if r > 0 {
			total++
		}
	}
	if total == 0 {
		return 0
	}
	found := 0
	for _, h := range ranked {
		if rels[h.DocID] > 0 {
			found++
		}
	}
	return float64(found) / float64(total)
}

func mean(perQuery map[string]float64) float64 {
	if len(perQuery) == 0 {
		return 0
	}
	ids := make([]string, 0, len(perQuery))
	for q := range perQuery {
		ids = append(ids, q)
	}
	sort.Strings(ids)
	sum := 0.0
	for _, q := range ids {
		sum += perQuery[q]
	}
	return sum / float64(len(ids))
}
