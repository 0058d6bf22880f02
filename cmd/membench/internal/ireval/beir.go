package ireval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// maxLine bounds one JSONL/TSV line. BEIR corpora have documents of several
// hundred KB (and the scanner's 64 KB default fails on them), so lines are
// scanned with a buffer that grows up to this size.
const maxLine = 64 << 20

// LoadBEIR loads a BEIR data set directory in its standard layout:
// corpus.jsonl, queries.jsonl and qrels/test.tsv. Corpus order is file
// order; queries are all queries of queries.jsonl (which, in the full BEIR
// releases, include train/dev queries too: evaluate over qrels, not over
// queries). Use LoadCorpus, LoadQueries and LoadQrels for other splits.
func LoadBEIR(dir string) (corpus []Doc, queries map[string]string, qrels Qrels, err error) {
	if corpus, err = LoadCorpus(filepath.Join(dir, "corpus.jsonl")); err != nil {
		return nil, nil, nil, err
	}
	if queries, err = LoadQueries(filepath.Join(dir, "queries.jsonl")); err != nil {
		return nil, nil, nil, err
	}
	if qrels, err = LoadQrels(filepath.Join(dir, "qrels", "test.tsv")); err != nil {
		return nil, nil, nil, err
	}
	return corpus, queries, qrels, nil
}

// jsonRecord is one line of corpus.jsonl or queries.jsonl; other fields
// ("metadata") are ignored. The id is kept raw because some BEIR exports
// write it as a number.
type jsonRecord struct {
	ID    json.RawMessage `json:"_id"`
	Title string          `json:"title"`
	Text  string          `json:"text"`
}

func (r jsonRecord) id() (string, error) {
	raw := bytes.TrimSpace(r.ID)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", fmt.Errorf("missing _id")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("bad _id: %w", err)
		}
		if s == "" {
			return "", fmt.Errorf("empty _id")
		}
		return s, nil
	}
	if _, err := strconv.ParseFloat(string(raw), 64); err != nil {
		return "", fmt.Errorf("bad _id %s", raw)
	}
	return string(raw), nil
}

// LoadCorpus reads a BEIR corpus.jsonl ({"_id", "title", "text", ...} per
// line) in file order. Duplicate ids are an error: they would make a run's
// doc ids ambiguous.
func LoadCorpus(path string) ([]Doc, error) {
	var docs []Doc
	seen := map[string]bool{}
	err := scanJSONL(path, func(r jsonRecord, id string) error {
		if seen[id] {
			return fmt.Errorf("duplicate _id %q", id)
		}
		seen[id] = true
		docs = append(docs, Doc{ID: id, Title: r.Title, Text: r.Text})
		return nil
	})
	return docs, err
}

// LoadQueries reads a BEIR queries.jsonl ({"_id", "text", ...} per line)
// into query id -> text. Duplicate ids are an error.
func LoadQueries(path string) (map[string]string, error) {
	queries := map[string]string{}
	err := scanJSONL(path, func(r jsonRecord, id string) error {
		if _, dup := queries[id]; dup {
			return fmt.Errorf("duplicate _id %q", id)
		}
		queries[id] = r.Text
		return nil
	})
	return queries, err
}

func scanJSONL(path string, fn func(r jsonRecord, id string) error) error {
	return scanLines(path, func(n int, line string) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		var r jsonRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return err
		}
		id, err := r.id()
		if err != nil {
			return err
		}
		return fn(r, id)
	})
}

// LoadQrels reads relevance judgements. It accepts the BEIR TSV format
// ("query-id<TAB>corpus-id<TAB>score", with or without that header line,
// recognised by its "score" column)
// and the TREC qrels format ("qid iter docid rel", whitespace separated), so
// the same judgements can be cross-checked against trec_eval's input.
// Judgements with relevance 0 are kept: they are judged non-relevant, which
// matters for nothing here but keeps the data faithful. A repeated
// (query, doc) pair is an error, as in trec_eval.
func LoadQrels(path string) (Qrels, error) {
	qrels := Qrels{}
	first := true
	err := scanLines(path, func(n int, line string) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		var fields []string
		if strings.Count(line, "\t") == 2 {
			fields = strings.Split(line, "\t")
			for i := range fields {
				fields[i] = strings.TrimSpace(fields[i])
			}
		} else {
			fields = strings.Fields(line)
		}
		var q, d, rel string
		switch len(fields) {
		case 3:
			q, d, rel = fields[0], fields[1], fields[2]
		case 4:
			q, d, rel = fields[0], fields[2], fields[3]
		default:
			return fmt.Errorf("want 3 (BEIR) or 4 (TREC) fields, got %d", len(fields))
		}
		if first && len(fields) == 3 && strings.EqualFold(rel, "score") {
			first = false
			return nil // the BEIR header "query-id corpus-id score"
		}
		first = false
		r, err := parseRel(rel)
		if err != nil {
			return err
		}
		if qrels[q] == nil {
			qrels[q] = map[string]int{}
		}
		if _, dup := qrels[q][d]; dup {
			return fmt.Errorf("duplicate judgement for query %q doc %q", q, d)
		}
		qrels[q][d] = r
		return nil
	})
	return qrels, err
}

// parseRel parses a relevance grade; "1.0" is accepted because some
// converters write grades as floats, but a fractional grade is an error
// since trec_eval's grades are integers.
func parseRel(s string) (int, error) {
	if r, err := strconv.Atoi(s); err == nil {
		return r, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1e9 {
		return 0, fmt.Errorf("bad relevance %q", s)
	}
	return int(f), nil
}

// scanLines calls fn for each line of the file (1-based n, "\r\n" tolerated,
// a leading BOM dropped), streaming so that large corpora are not read into
// memory at once, and prefixes errors with the file and line.
func scanLines(path string, fn func(n int, line string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only
	return scanReader(path, f, fn)
}

func scanReader(name string, r io.Reader, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSuffix(sc.Text(), "\r")
		if n == 1 {
			line = trimBOM(line)
		}
		if err := fn(n, line); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: after line %d: %w", name, n, err)
	}
	return nil
}

// trimBOM drops a UTF-8 byte order mark, which some tools put at the start
// of TSV/JSONL exports and which would otherwise end up in the first id.
func trimBOM(s string) string { return strings.TrimPrefix(s, "\uFEFF") }
