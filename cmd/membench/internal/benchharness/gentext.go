package benchharness

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/garden-bloom/memory/pkg/temporalgraph"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// The synthetic text is built from a seeded vocabulary of pronounceable
// pseudo-words (so BM25 has rare, distinctive terms to find) glued together
// with common English words in a few sentence templates. Every agent has a
// "domain": a fixed subset of the vocabulary its memory talks about, so a
// query built from an agent's domain finds that agent's facts.

const (
	vocabSize      = 4000
	domainSize     = 48
	sharedEntities = 240
)

var (
	onsets = []string{"b", "br", "c", "ch", "d", "dr", "f", "g", "gr", "h", "k", "kl", "l", "m", "n", "p", "pl", "qu", "r", "s", "sk", "st", "t", "tr", "v", "w", "z"}
	nuclei = []string{"a", "e", "i", "o", "u", "ai", "ea", "io", "ou"}
	codas  = []string{"", "", "n", "r", "l", "m", "s", "x", "nd", "rt", "st"}

	nouns = []string{"service", "cluster", "bucket", "pipeline", "replica", "queue", "schema", "index", "gateway", "worker",
		"dashboard", "runbook", "contract", "budget", "release", "migration", "backup", "policy", "tenant", "ledger"}
	verbs = []string{"keeps", "rotates", "mirrors", "archives", "validates", "publishes", "throttles", "compacts", "exports", "owns"}
	units = []string{"replicas", "shards", "keys", "snapshots", "partitions", "reviewers", "alerts", "jobs", "tables", "regions"}
	// FactSections are the "## " sections of every generated facts.md.
	factSections = []string{"Domain", "Technical", "Infrastructure", "People", "Processes", "Project context"}
	entityKinds  = []string{"", "project:", "person:", "artifact:"}
)

// textModel is the deterministic vocabulary of one seed.
type textModel struct {
	words    []string // pseudo-words
	entities []string // entity labels, e.g. "Kelmor Station"
	ids      []string // their entity ids (temporalgraph.Slug)
	kinds    []string // link prefix per entity ("" or "project:" …)
}

func newTextModel(seed int64) *textModel {
	r := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	seen := map[string]bool{}
	word := func(syll int) string {
		for {
			var b strings.Builder
			for range syll {
				b.WriteString(onsets[r.IntN(len(onsets))])
				b.WriteString(nuclei[r.IntN(len(nuclei))])
			}
			b.WriteString(codas[r.IntN(len(codas))])
			w := b.String()
			if len(w) >= 5 && !seen[w] {
				seen[w] = true
				return w
			}
		}
	}
	m := &textModel{}
	for range vocabSize {
		m.words = append(m.words, word(2+r.IntN(2)))
	}
	for i := range sharedEntities {
		label := capitalize(word(2)) + " " + capitalize(word(2))
		m.entities = append(m.entities, label)
		m.ids = append(m.ids, temporalgraph.Slug(label))
		m.kinds = append(m.kinds, entityKinds[i%len(entityKinds)])
	}
	return m
}

func capitalize(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// domain returns the words agent i talks about (deterministic).
func (m *textModel) domain(seed int64, agent int) []string {
	r := rand.New(rand.NewPCG(uint64(seed)^0x5bd1e995, uint64(agent)))
	out := make([]string, domainSize)
	for i := range out {
		out[i] = m.words[r.IntN(len(m.words))]
	}
	return out
}

// link renders a wiki link to shared entity e.
func (m *textModel) link(e int) string { return "[[" + m.kinds[e] + m.entities[e] + "]]" }

// writer produces sentences for one agent from its domain.
type writer struct {
	m   *textModel
	r   *rand.Rand
	dom []string
}

func (w *writer) dw() string { return w.dom[w.r.IntN(len(w.dom))] }
func (w *writer) vw() string { return w.m.words[w.r.IntN(len(w.m.words))] }
func pick(r *rand.Rand, s []string) string {
	return s[r.IntN(len(s))]
}

// fact returns one fact's text (no marker) and the entity linked, or -1.
func (w *writer) fact() (string, int) {
	e := -1
	subject := "the " + w.dw() + " " + pick(w.r, nouns)
	if w.r.IntN(10) < 3 {
		e = w.r.IntN(len(w.m.entities))
		subject = w.m.link(e) + " " + pick(w.r, nouns)
	}
	switch w.r.IntN(4) {
	case 0:
		return fmt.Sprintf("%s %s %d %s %s for the %s team every %d days", capitalize(subject), pick(w.r, verbs),
			1+w.r.IntN(9), w.dw(), pick(w.r, units), w.dw(), 1+w.r.IntN(30)), e
	case 1:
		return fmt.Sprintf("%s depends on the %s %s and the %s %s since %s", capitalize(subject), w.dw(), pick(w.r, nouns),
			w.vw(), pick(w.r, nouns), w.date()), e
	case 2:
		return fmt.Sprintf("%s is owned by %s %s; escalate %s incidents to the %s rota", capitalize(subject), capitalize(w.vw()),
			capitalize(w.vw()), w.dw(), w.dw()), e
	default:
		return fmt.Sprintf("%s %s %s %s with %d %s in the %s region", capitalize(subject), pick(w.r, verbs), w.dw(),
			pick(w.r, units), 2+w.r.IntN(40), pick(w.r, units), w.dw()), e
	}
}

func (w *writer) date() string {
	return fmt.Sprintf("2025-%02d-%02d", 1+w.r.IntN(12), 1+w.r.IntN(28))
}

// sentence returns a prose sentence for snapshots, runs and sources.
func (w *writer) sentence() string {
	switch w.r.IntN(3) {
	case 0:
		return fmt.Sprintf("The %s %s %s the %s %s while the %s %s waits for review.", w.dw(), pick(w.r, nouns), pick(w.r, verbs),
			w.dw(), pick(w.r, units), w.vw(), pick(w.r, nouns))
	case 1:
		return fmt.Sprintf("We agreed that %s %s should move to the %s %s before the %s release.", w.dw(), pick(w.r, units),
			w.dw(), pick(w.r, nouns), w.vw())
	default:
		return fmt.Sprintf("Latency of the %s %s stays under %d ms when %s %s are %s.", w.dw(), pick(w.r, nouns), 5+w.r.IntN(200),
			w.dw(), pick(w.r, units), pick(w.r, []string{"warm", "cached", "sharded", "pinned"}))
	}
}

// paragraph returns sentences totalling about n tokens (estimated).
func (w *writer) paragraph(est *estimator, n int) string {
	var b strings.Builder
	got := 0
	for got < n {
		s := w.sentence()
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
		got += est.count(s)
	}
	return b.String()
}

// estimator counts tokens roughly but fast: the sum of the tiktoken counts
// of the whitespace-separated fields (each with its leading space), cached
// per field, plus one per line break. Generated text reuses a bounded set of
// fields, so after warm-up every count is a few map lookups. It stays within
// a few percent of a whole-text tiktoken count (the generator test checks
// the limits with the real counter). An estimator is not safe for
// concurrent use; the counter it wraps is.
type estimator struct {
	c     *tokens.Counter
	cache map[string]int
}

func newEstimator(c *tokens.Counter) *estimator { return &estimator{c: c, cache: map[string]int{}} }

func (e *estimator) count(s string) int {
	n := 0
	for i := 0; i < len(s); {
		for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t') {
			if s[i] == '\n' {
				n++
			}
			i++
		}
		j := i
		for j < len(s) && s[j] != ' ' && s[j] != '\n' && s[j] != '\t' {
			j++
		}
		if j > i {
			f := s[i:j]
			c, ok := e.cache[f]
			if !ok {
				c = e.c.Count(" " + f)
				if len(e.cache) < 1<<20 {
					e.cache[f] = c
				}
			}
			n += c
		}
		i = j
	}
	return n
}
