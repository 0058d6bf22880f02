package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Lucene reference, whole turns packed greedily (../shared/data/README.md).
var locomoReference = map[int]float64{1000: 64.0, 2000: 71.0, 4000: 77.2, 8000: 83.2}

var locomoBudgets = []int{1000, 2000, 4000, 8000}

type locomoTurn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
	// Caption is BLIP's caption of the image the turn shared, if any.
	Caption string `json:"blip_caption"`
}

type locomoQA struct {
	Question string   `json:"question"`
	Evidence []string `json:"evidence"`
	Category int      `json:"category"`
}

type locomoSample struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []locomoQA                 `json:"qa"`
}

var (
	sessionKey = regexp.MustCompile(`^session_(\d+)$`)
	evidenceID = regexp.MustCompile(`D:?(\d+):0*(\d+)`)
)

// normalizeEvidence fixes the data set's malformed ids ("D8:6; D9:17",
// "D:11:26", "D30:05") into tags like "D8:6".
func normalizeEvidence(ev []string) []string {
	var out []string
	for _, e := range ev {
		for _, m := range evidenceID.FindAllStringSubmatch(e, -1) {
			out = append(out, "D"+m[1]+":"+m[2])
		}
	}
	return out
}

// locomoCategories names LoCoMo's question categories 1–4.
var locomoCategories = []string{"multi-hop", "temporal", "open-domain", "single-hop"}

// loadLocomo reads LoCoMo as a retrieval set, by the memory-retrieval
// protocol of ../shared/data/README.md: each conversation is an agent whose
// sessions are its sources, one turn per line tagged [D<session>:<turn>],
// a shared image's caption after the turn's text (as the Lucene reference
// indexed it); every question of categories 1–4 with evidence asks for its
// evidence turns' tags.
func loadLocomo(path string) (*retrievalSet, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var samples []locomoSample
	if err := json.Unmarshal(raw, &samples); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	set := &retrievalSet{name: "LoCoMo", categories: locomoCategories, budgets: locomoBudgets,
		reference: locomoReference, referenceName: "Lucene BM25, whole turns"}
	for _, s := range samples {
		a := retrievalAgent{id: strings.ToLower(strings.ReplaceAll(s.SampleID, "_", "-")), sources: map[string]string{}}
		var keys []string
		for k := range s.Conversation {
			if sessionKey.MatchString(k) {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			var turns []locomoTurn
			if err := json.Unmarshal(s.Conversation[k], &turns); err != nil {
				return nil, err
			}
			var date string
			_ = json.Unmarshal(s.Conversation[k+"_date_time"], &date)
			var b strings.Builder
			fmt.Fprintf(&b, "# %s — %s\n\n", strings.ReplaceAll(k, "_", " "), date)
			for _, t := range turns {
				text := strings.Join(strings.Fields(t.Text), " ")
				if t.Caption != "" {
					text += " [image: " + strings.Join(strings.Fields(t.Caption), " ") + "]"
				}
				fmt.Fprintf(&b, "- [%s] %s: %s\n", t.DiaID, t.Speaker, text)
			}
			a.sources[k+".md"] = b.String()
		}
		set.agents = append(set.agents, a)
		for _, q := range s.QA {
			ev := normalizeEvidence(q.Evidence)
			if q.Category < 1 || q.Category > 4 || len(ev) == 0 {
				continue
			}
			for i, e := range ev {
				ev[i] = "[" + e + "]"
			}
			set.questions = append(set.questions, retrievalQuestion{agent: a.id, text: q.Question,
				category: locomoCategories[q.Category-1], evidence: ev})
		}
	}
	return set, nil
}
