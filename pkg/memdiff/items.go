package memdiff

import (
	"sort"
	"strings"
	"unicode"

	"github.com/garden-bloom/memory/pkg/editdist"
	"github.com/garden-bloom/memory/pkg/mdops"
)

// Item kinds reported in ItemChange.Item.
const (
	ItemFact     = "fact"
	ItemLoop     = "loop"
	ItemDecision = "decision"
)

// Change kinds reported in ItemChange.Change.
const (
	Added   = "added"
	Removed = "removed"
	Changed = "changed"
)

// The agent-relative names of the files Items understands (the same names
// as memlayout's FactsFile, OpenLoopsFile and DecisionsFile; repeated here
// so that this pure package does not depend on the layout's API types).
const (
	factsFile     = "facts.md"
	openLoopsFile = "open_loops.md"
	decisionsFile = "decisions.md"
)

// ItemChange is one fact, loop or decision that differs between two
// versions of a memory file.
type ItemChange struct {
	// Item is "fact", "loop" or "decision".
	Item string
	// Change is "added", "removed" or "changed".
	Change string
	// Section is where the item is now ("## " title of facts.md or
	// open_loops.md; for decisions, the entry's own heading
	// "YYYY-MM-DD — Title"), or where it was if it was removed.
	Section string
	// Before and After render the item on each side; the side where it
	// does not exist is "". See Items for the rendering of each kind.
	Before, After string
}

// Items compares two versions of the memory file rel (agent-relative name,
// "facts.md", "open_loops.md" or "decisions.md"; nil for any other file)
// item by item. Parsing is mdops's, so what counts as a fact, loop or
// decision is exactly what the write plane reads and writes. The result is
// nil when nothing changed; otherwise it is sorted by Item, then Section,
// then the item's text (the new text, or the old one for a removal), so
// the same inputs always give the same list.
//
// facts.md — facts are matched by their text, a file's duplicates one to
// one in file order:
//   - the same text in the same section is unchanged;
//   - the same text in another section is "changed" (a move): Section is
//     the new section, Before and After are "[<old section>] <text>" and
//     "[<new section>] <text>";
//   - of the facts left, a removed and an added fact of the same section
//     whose texts are similar are one "changed" fact (a rewording), Before
//     the old text and After the new one. Texts are similar when the
//     Jaccard index of their word sets (Unicode letters and digits,
//     lower-cased) is at least 0.6, or their edit distance (in runes,
//     case-folded) is at most 0.3 of the longer text — the first catches
//     reordered or extended sentences, the second changed numbers and
//     typos in short facts, where one word is a large share of the words.
//     Pairs are made greedily, most similar first (then in file order), so
//     each fact pairs at most once;
//   - the rest are "added" (After = text) or "removed" (Before = text).
//
// open_loops.md — loops are matched by ID, loops without an ID (written
// by hand) by their text. A loop only in the new file is "added", only in
// the old one "removed"; a matched loop is "changed" when any field mdops
// parses from it differs (text, section, priority, closed state, dates,
// run, resolution) — closing a loop is therefore a change, with Section
// the new section ("Closed"). Before and After are the loop's line as it
// stands in each file, trailing space trimmed: the line already is a short
// complete rendering that a reader can find in the file. Changes of
// formatting alone are left to the unified diff.
//
// decisions.md — decisions are matched by mdops's ID (date and title
// slug), so a retitled decision is removed and added. An added or removed
// decision renders as "status: <status> | decision: <decision>"; a changed
// one (any field differs) renders only the fields that differ, as
// "<field>: <value>" joined by " | ", a field that is empty on one side as
// "(none)". Values are folded to one line.
func Items(rel string, before, after string) []ItemChange {
	var out []keyed
	switch rel {
	case factsFile:
		out = factChanges(mdops.ParseFacts(before), mdops.ParseFacts(after))
	case openLoopsFile:
		out = loopChanges(before, after)
	case decisionsFile:
		out = decisionChanges(mdops.ParseDecisions(before), mdops.ParseDecisions(after))
	default:
		return nil
	}
	if len(out) == 0 {
		return nil
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Item != b.Item {
			return a.Item < b.Item
		}
		if a.Section != b.Section {
			return a.Section < b.Section
		}
		if a.key != b.key {
			return a.key < b.key
		}
		// Identical keys (duplicated facts, say): order by the rest so the
		// result does not depend on the sort algorithm.
		if a.Change != b.Change {
			return a.Change < b.Change
		}
		if a.Before != b.Before {
			return a.Before < b.Before
		}
		return a.After < b.After
	})
	res := make([]ItemChange, len(out))
	for i, k := range out {
		res[i] = k.ItemChange
	}
	return res
}

// keyed is an ItemChange with the text it sorts by (Before and After may
// carry decoration such as a section prefix that must not affect order).
type keyed struct {
	ItemChange
	key string
}

// factChanges implements the facts.md rules of Items.
func factChanges(bf, af []mdops.Fact) []keyed {
	usedB := make([]bool, len(bf))
	usedA := make([]bool, len(af))
	var out []keyed

	// Unchanged: same text in the same section, paired in file order.
	same := map[[2]string][]int{}
	for i, f := range bf {
		k := [2]string{f.Section, f.Text}
		same[k] = append(same[k], i)
	}
	for j, f := range af {
		k := [2]string{f.Section, f.Text}
		if q := same[k]; len(q) > 0 {
			usedB[q[0]], usedA[j] = true, true
			same[k] = q[1:]
		}
	}

	// Moves: same text, another section.
	byText := map[string][]int{}
	for i, f := range bf {
		if !usedB[i] {
			byText[f.Text] = append(byText[f.Text], i)
		}
	}
	for j, f := range af {
		if usedA[j] {
			continue
		}
		if q := byText[f.Text]; len(q) > 0 {
			i := q[0]
			byText[f.Text] = q[1:]
			usedB[i], usedA[j] = true, true
			out = append(out, keyed{ItemChange{
				Item: ItemFact, Change: Changed, Section: f.Section,
				Before: "[" + bf[i].Section + "] " + f.Text,
				After:  "[" + f.Section + "] " + f.Text,
			}, f.Text})
		}
	}

	// Rewordings within a section.
	var rb, ra []int
	for i := range bf {
		if !usedB[i] {
			rb = append(rb, i)
		}
	}
	for j := range af {
		if !usedA[j] {
			ra = append(ra, j)
		}
	}
	for _, p := range rewordPairs(bf, af, rb, ra) {
		usedB[p[0]], usedA[p[1]] = true, true
		out = append(out, keyed{ItemChange{
			Item: ItemFact, Change: Changed, Section: af[p[1]].Section,
			Before: bf[p[0]].Text, After: af[p[1]].Text,
		}, af[p[1]].Text})
	}

	for i, f := range bf {
		if !usedB[i] {
			out = append(out, keyed{ItemChange{Item: ItemFact, Change: Removed, Section: f.Section, Before: f.Text}, f.Text})
		}
	}
	for j, f := range af {
		if !usedA[j] {
			out = append(out, keyed{ItemChange{Item: ItemFact, Change: Added, Section: f.Section, After: f.Text}, f.Text})
		}
	}
	return out
}

// Similarity thresholds of the rewording rule (see Items).
const (
	minJaccard      = 0.6
	maxEditFraction = 0.3
	// maxEditWork bounds the rune comparisons spent on edit distances in
	// one file; beyond it (a wholesale rewrite of a big section) only the
	// word rule is used, which keeps Items fast on any input while staying
	// deterministic, as the bound depends on the inputs alone.
	maxEditWork = 20_000_000
)

// rewordPairs pairs removed facts rb with added facts ra of the same
// section whose texts are similar, most similar first.
func rewordPairs(bf, af []mdops.Fact, rb, ra []int) [][2]int {
	type cand struct {
		i, j  int
		score float64
	}
	type prepared struct {
		words map[string]bool
		runes []rune
	}
	prep := func(s string) prepared {
		p := prepared{words: map[string]bool{}, runes: []rune(strings.ToLower(s))}
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) {
			p.words[w] = true
		}
		return p
	}
	pb := map[int]prepared{}
	for _, i := range rb {
		pb[i] = prep(bf[i].Text)
	}
	pa := map[int]prepared{}
	for _, j := range ra {
		pa[j] = prep(af[j].Text)
	}
	work := 0
	for _, i := range rb {
		for _, j := range ra {
			if bf[i].Section == af[j].Section {
				work += len(pb[i].runes) * len(pa[j].runes)
			}
		}
	}
	useEdit := work <= maxEditWork

	var cands []cand
	for _, i := range rb {
		for _, j := range ra {
			if bf[i].Section != af[j].Section {
				continue
			}
			score := jaccard(pb[i].words, pa[j].words)
			ok := score >= minJaccard
			if useEdit {
				x, y := pb[i].runes, pa[j].runes
				longer := max(len(x), len(y))
				// The distance is at least the length difference, so most
				// pairs are ruled out before the quadratic computation.
				if longer > 0 && float64(abs(len(x)-len(y))) <= maxEditFraction*float64(longer) {
					frac := float64(editdist.Levenshtein(x, y)) / float64(longer)
					if frac <= maxEditFraction {
						ok = true
					}
					score = max(score, 1-frac)
				}
			}
			if ok {
				cands = append(cands, cand{i, j, score})
			}
		}
	}
	sort.Slice(cands, func(x, y int) bool {
		a, b := cands[x], cands[y]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.i != b.i {
			return a.i < b.i
		}
		return a.j < b.j
	})
	usedB, usedA := map[int]bool{}, map[int]bool{}
	var out [][2]int
	for _, c := range cands {
		if !usedB[c.i] && !usedA[c.j] {
			usedB[c.i], usedA[c.j] = true, true
			out = append(out, [2]int{c.i, c.j})
		}
	}
	return out
}

// jaccard is |a∩b| / |a∪b| of two word sets; 0 when both are empty (no
// words to compare is no evidence of similarity).
func jaccard(a, b map[string]bool) float64 {
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// loopChanges implements the open_loops.md rules of Items.
func loopChanges(before, after string) []keyed {
	type rec struct {
		lp   mdops.Loop
		line string
	}
	load := func(md string) []rec {
		ls := mdops.Lines(md)
		var out []rec
		for _, lp := range mdops.ParseLoops(md) {
			out = append(out, rec{lp, strings.TrimRightFunc(ls[lp.Line-1], unicode.IsSpace)})
		}
		return out
	}
	key := func(lp mdops.Loop) string {
		if lp.ID != "" {
			return "id\x00" + lp.ID
		}
		return "text\x00" + lp.Text
	}
	sortKey := func(lp mdops.Loop) string {
		if lp.ID != "" {
			return lp.ID + ": " + lp.Text
		}
		return lp.Text
	}
	bl, al := load(before), load(after)
	pending := map[string][]int{}
	for i, r := range bl {
		k := key(r.lp)
		pending[k] = append(pending[k], i)
	}
	usedB := make([]bool, len(bl))
	var out []keyed
	for _, r := range al {
		k := key(r.lp)
		q := pending[k]
		if len(q) == 0 {
			out = append(out, keyed{ItemChange{Item: ItemLoop, Change: Added, Section: r.lp.Section, After: r.line}, sortKey(r.lp)})
			continue
		}
		pending[k] = q[1:]
		usedB[q[0]] = true
		if old := bl[q[0]]; !sameLoop(old.lp, r.lp) {
			out = append(out, keyed{ItemChange{Item: ItemLoop, Change: Changed, Section: r.lp.Section, Before: old.line, After: r.line}, sortKey(r.lp)})
		}
	}
	for i, r := range bl {
		if !usedB[i] {
			out = append(out, keyed{ItemChange{Item: ItemLoop, Change: Removed, Section: r.lp.Section, Before: r.line}, sortKey(r.lp)})
		}
	}
	return out
}

// sameLoop compares what a loop means, not where it is (Line) or how its
// line is spelled.
func sameLoop(a, b mdops.Loop) bool {
	return a.ID == b.ID && a.Text == b.Text && a.Section == b.Section && a.Priority == b.Priority &&
		a.Closed == b.Closed && a.Opened.Equal(b.Opened) && a.ClosedAt.Equal(b.ClosedAt) &&
		a.RunID == b.RunID && a.Resolution == b.Resolution
}

// decisionChanges implements the decisions.md rules of Items.
func decisionChanges(bd, ad []mdops.Decision) []keyed {
	byID := map[string]int{}
	for i, d := range bd {
		byID[d.ID] = i
	}
	usedB := make([]bool, len(bd))
	var out []keyed
	for _, d := range ad {
		i, ok := byID[d.ID]
		if !ok || usedB[i] {
			out = append(out, keyed{ItemChange{Item: ItemDecision, Change: Added, Section: decisionHeading(d), After: decisionGist(d)}, d.ID})
			continue
		}
		usedB[i] = true
		var before, after []string
		for _, f := range decisionFields {
			x, y := fold(f.get(bd[i])), fold(f.get(d))
			if x != y {
				before = append(before, f.name+": "+orNone(x))
				after = append(after, f.name+": "+orNone(y))
			}
		}
		if !bd[i].Date.Equal(d.Date) {
			before = append(before, "date: "+bd[i].Date.Format("2006-01-02"))
			after = append(after, "date: "+d.Date.Format("2006-01-02"))
		}
		if len(before) > 0 {
			out = append(out, keyed{ItemChange{
				Item: ItemDecision, Change: Changed, Section: decisionHeading(d),
				Before: strings.Join(before, " | "), After: strings.Join(after, " | "),
			}, d.ID})
		}
	}
	for i, d := range bd {
		if !usedB[i] {
			out = append(out, keyed{ItemChange{Item: ItemDecision, Change: Removed, Section: decisionHeading(d), Before: decisionGist(d)}, d.ID})
		}
	}
	return out
}

// decisionFields are the compared fields of a decision, in file order.
var decisionFields = []struct {
	name string
	get  func(mdops.Decision) string
}{
	{"title", func(d mdops.Decision) string { return d.Title }},
	{"status", func(d mdops.Decision) string { return d.Status }},
	{"context", func(d mdops.Decision) string { return d.Context }},
	{"decision", func(d mdops.Decision) string { return d.Decision }},
	{"rationale", func(d mdops.Decision) string { return d.Rationale }},
	{"consequences", func(d mdops.Decision) string { return d.Consequences }},
	{"run", func(d mdops.Decision) string { return d.RunID }},
}

// decisionHeading is the entry's heading text as AddDecision writes it.
func decisionHeading(d mdops.Decision) string {
	return d.Date.UTC().Format("2006-01-02") + " — " + d.Title
}

// decisionGist renders an added or removed decision: its status and what
// was decided, which is what a reviewer needs at a glance.
func decisionGist(d mdops.Decision) string {
	s := "status: " + orNone(fold(d.Status))
	if v := fold(d.Decision); v != "" {
		s += " | decision: " + v
	}
	return s
}

// fold puts a possibly multi-line field value on one line.
func fold(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
