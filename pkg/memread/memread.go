// Package memread decides what a read of an agent's memory returns (spec
// DiffMem §4.1, §4.6, §11.4, §11.6): which files each mode loads, in which
// order, and how everything is kept within the token budget — cutting at
// section boundaries, never going over. It is pure: files come through a
// reader, so the same commit and request always give the same answer.
package memread

import (
	"fmt"
	"slices"
	"strings"

	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// Mode is what a read loads.
type Mode string

// The modes.
const (
	Basic    Mode = "basic"
	Wide     Mode = "wide"
	Deep     Mode = "deep"
	Temporal Mode = "temporal"
)

// Guaranteed maxima (spec §11.6; deep from §4.1).
const (
	BasicMax = 4100
	WideMax  = 13000
	DeepMax  = 32000
	// WideDecisions is how many newest decisions wide mode loads.
	WideDecisions = 5
	// DeepTimelineDays is how many days of timeline deep mode loads.
	DeepTimelineDays = 7
)

// Max is the mode's guaranteed token maximum.
func Max(m Mode) int {
	switch m {
	case Basic:
		return BasicMax
	case Wide:
		return WideMax
	}
	return DeepMax
}

// Source gives the reader the agent's files at one commit.
type Source struct {
	// Read returns a file relative to the agent folder; ok=false if absent.
	Read func(rel string) (content string, ok bool, err error)
	// List returns the files under a folder of the agent ("timeline/"), sorted.
	List func(dir string) ([]string, error)
	// Count counts tokens.
	Count func(string) int
}

// Request is a read.
type Request struct {
	Mode Mode
	// MaxTokens lowers the mode's maximum; 0 = the mode's maximum.
	MaxTokens int
	// Include limits the read to these files (relative names); Layer 2
	// files are never added to basic or wide this way.
	Include []string
	// Exclude leaves out these files or folders ("runs/").
	Exclude []string
	// Today is the commit's date (YYYY-MM-DD), for deep mode's timeline.
	Today string
	// Extra are files loaded after the mode's own (temporal diffs), each
	// already rendered; they obey the same budget.
	Extra []File
	// Reserved tokens are already spent (meta.json, returned beside the
	// files) and count against the budget.
	Reserved int
	// AlwaysLoad are the agent's ALWAYS_LOAD blocks (CollectAlwaysLoad);
	// basic and wide load those of files they do not load whole, right
	// after snapshot.md, whatever Include and Exclude say.
	AlwaysLoad []Block
	// Header names a returned file as the caller shows it (its cost counts
	// against the budget); nil = Header.
	Header func(rel string) string
}

// Block is the text of a file's ALWAYS_LOAD blocks.
type Block struct {
	Rel     string
	Content string
}

// A block between mdops.AlwaysLoadOpen and mdops.AlwaysLoadClose is always
// part of basic and wide reads.
const (
	// AlwaysLoadPrefix names the loaded blocks: "always_load/decisions.md".
	AlwaysLoadPrefix = "always_load/"
)

// AlwaysLoadBlocks returns the text inside md's ALWAYS_LOAD blocks, in order;
// a block left open runs to the end of the file.
func AlwaysLoadBlocks(md string) []string {
	var out []string
	for {
		i := strings.Index(md, mdops.AlwaysLoadOpen)
		if i < 0 {
			return out
		}
		md = md[i+len(mdops.AlwaysLoadOpen):]
		body := md
		if j := strings.Index(md, mdops.AlwaysLoadClose); j >= 0 {
			body, md = md[:j], md[j+len(mdops.AlwaysLoadClose):]
		} else {
			md = ""
		}
		if body = strings.Trim(body, "\n"); strings.TrimSpace(body) != "" {
			out = append(out, body+"\n")
		}
	}
}

// CollectAlwaysLoad reads the agent's Layer 1 files and returns the
// ALWAYS_LOAD blocks of each, in file order. Blocks in Layer 2 files are not
// collected: Layer 2 is loaded only on explicit request (spec DiffMem §11.2).
func CollectAlwaysLoad(src Source) ([]Block, error) {
	files, err := src.List("")
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var out []Block
	for _, rel := range files {
		if !strings.HasSuffix(rel, ".md") || !layer1(rel) {
			continue
		}
		content, ok, err := src.Read(rel)
		if err != nil {
			return nil, err
		}
		if blocks := AlwaysLoadBlocks(content); ok && len(blocks) > 0 {
			out = append(out, Block{Rel: rel, Content: strings.Join(blocks, "\n")})
		}
	}
	return out, nil
}

// loadedWhole lists the files a mode loads in full (their blocks are in them).
func loadedWhole(m Mode) []string {
	switch m {
	case Basic:
		return []string{memlayout.SnapshotFile, memlayout.OpenLoopsFile}
	case Wide:
		return []string{memlayout.SnapshotFile, memlayout.OpenLoopsFile, memlayout.FactsFile}
	}
	return nil
}

// File is one loaded file.
type File struct {
	Rel       string
	Content   string
	Tokens    int
	Layer     int
	Truncated bool
}

// Result is what the read returns.
type Result struct {
	Files     []File
	Tokens    int
	Budget    int
	Truncated bool
	Warnings  []string
}

// plan lists the files a mode loads, in order.
func plan(src Source, req Request) ([]string, error) {
	switch req.Mode {
	case Basic, Temporal:
		if req.Mode == Temporal {
			return []string{memlayout.SnapshotFile}, nil
		}
		return []string{memlayout.SnapshotFile, memlayout.OpenLoopsFile}, nil
	case Wide:
		return []string{memlayout.SnapshotFile, memlayout.OpenLoopsFile, memlayout.FactsFile, memlayout.DecisionsFile}, nil
	case Deep:
		files := []string{memlayout.SnapshotFile, memlayout.OpenLoopsFile, memlayout.FactsFile, memlayout.DecisionsFile, memlayout.ChangelogFile}
		days, err := src.List("timeline/")
		if err != nil {
			return nil, err
		}
		slices.Sort(days)
		var recent []string
		for i := len(days) - 1; i >= 0 && len(recent) < DeepTimelineDays; i-- {
			if req.Today == "" || strings.TrimSuffix(strings.TrimPrefix(days[i], "timeline/"), ".md") <= req.Today {
				recent = append(recent, days[i])
			}
		}
		slices.Reverse(recent)
		return append(files, recent...), nil
	}
	return nil, fmt.Errorf("unknown mode %q", req.Mode)
}

func excluded(rel string, exclude []string) bool {
	for _, e := range exclude {
		if rel == e || (strings.HasSuffix(e, "/") && strings.HasPrefix(rel, e)) {
			return true
		}
	}
	return false
}

// Read loads the request's files within its budget.
//
// What counts against the budget — "everything" a read returns to an agent —
// is, each string counted on its own with src.Count and summed:
//
//   - req.Reserved (the meta block, returned beside the files);
//   - for every returned file, ALWAYS_LOAD blocks ("always_load/<file>") and
//     Extra files included: Count(req.Header(rel)) + Count(content), Header
//     when req.Header is nil;
//   - every warning.
//
// Result.Tokens is exactly that sum and never exceeds Result.Budget, the
// smaller of req.MaxTokens and the mode's maximum. A file that does not fit
// is cut at a section boundary (else at a line boundary) or left out, and a
// warning says which. The smallest answer is the reserved part plus the
// first planned file cut to its first line, with the warnings saying so; a
// budget below that is refused with a *BudgetTooSmallError naming it, never
// answered with less.
func Read(src Source, req Request) (*Result, error) {
	budget := Max(req.Mode)
	if req.MaxTokens > 0 && req.MaxTokens < budget {
		budget = req.MaxTokens
	}
	items, err := planned(src, req)
	if err != nil {
		return nil, err
	}
	header := req.Header
	if header == nil {
		header = Header
	}
	return fit(items, budget, req.Reserved, func(rel string) int { return src.Count(header(rel)) }, src.Count)
}

// planned lists, in load order, every file the request may return.
func planned(src Source, req Request) ([]File, error) {
	files, err := plan(src, req)
	if err != nil {
		return nil, err
	}
	if len(req.Include) > 0 {
		var kept []string
		for _, f := range files {
			if slices.Contains(req.Include, f) {
				kept = append(kept, f)
			}
		}
		files = kept
	}
	var out []File
	blocksAdded := false
	for _, rel := range files {
		if excluded(rel, req.Exclude) {
			continue
		}
		content, ok, err := src.Read(rel)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		layer := 2
		if f, err := memlayout.Resolve("x", rel); err == nil {
			layer = f.Layer
		}
		if rel == memlayout.DecisionsFile && req.Mode == Wide {
			content = lastDecisions(content, WideDecisions)
			if content == "" {
				continue
			}
		}
		out = append(out, File{Rel: rel, Content: content, Layer: layer})
		if rel == memlayout.SnapshotFile {
			out = append(out, alwaysLoad(req)...)
			blocksAdded = true
		}
	}
	if !blocksAdded {
		out = append(out, alwaysLoad(req)...)
	}
	for _, f := range req.Extra {
		if !excluded(f.Rel, req.Exclude) {
			out = append(out, f)
		}
	}
	return out, nil
}

// BudgetTooSmallError refuses a budget that cannot hold even the smallest
// answer; Min is the smallest budget that works.
type BudgetTooSmallError struct{ Budget, Min int }

func (e *BudgetTooSmallError) Error() string {
	return fmt.Sprintf("a budget of %d tokens cannot hold this read; the smallest budget that works is %d tokens", e.Budget, e.Min)
}

// Header is the text that names a file beside its content in a response
// (FileContent.file, the key of ReadMemoryResponse.content): its path
// relative to the agent folder. It counts against the budget.
func Header(rel string) string { return rel }

// selection is one choice of what to return.
type selection struct {
	files         []File
	content       int // tokens of headers and contents
	truncated     bool
	warnings      []string
	warningTokens int
	firstLoaded   bool
}

// warn says what was cut and left out. The words do not depend on the
// budget, so the smallest answer's cost does not either.
func (s *selection) warn(cut, out []string, count func(string) int) {
	if len(cut) > 0 {
		s.warnings = append(s.warnings, "cut at a section boundary to fit the token budget: "+strings.Join(cut, ", "))
	}
	if len(out) > 0 {
		s.warnings = append(s.warnings, "left out to fit the token budget: "+strings.Join(out, ", "))
	}
	for _, w := range s.warnings {
		s.warningTokens += count(w)
	}
	s.truncated = len(cut)+len(out) > 0
}

// choose loads items in order within room tokens (headers and contents).
func choose(items []File, room int, headerCost, count func(string) int) *selection {
	s := &selection{}
	var cut, out []string
	for i, f := range items {
		h, full := headerCost(f.Rel), count(f.Content)
		left := room - s.content
		if h+full <= left {
			f.Tokens, f.Truncated = full, false
			s.files = append(s.files, f)
			s.content += h + full
			s.firstLoaded = s.firstLoaded || i == 0
			continue
		}
		part := ""
		if left > h {
			part = fitSections(f.Content, left-h, count)
		}
		if part == "" {
			out = append(out, fmt.Sprintf("%s (%d tokens)", f.Rel, full))
			continue
		}
		f.Content, f.Tokens, f.Truncated = part, count(part), true
		s.files = append(s.files, f)
		s.content += h + f.Tokens
		s.firstLoaded = s.firstLoaded || i == 0
		cut = append(cut, f.Rel)
	}
	s.warn(cut, out, count)
	return s
}

// smallest is the smallest answer: the first item cut to its first line.
func smallest(items []File, headerCost, count func(string) int) *selection {
	s := &selection{firstLoaded: true}
	if len(items) == 0 {
		return s
	}
	var cut, out []string
	first := items[0]
	line, _, more := strings.Cut(first.Content, "\n")
	if more {
		line += "\n"
	}
	first.Tokens = count(line)
	if line != first.Content {
		first.Content, first.Truncated = line, true
		cut = append(cut, first.Rel)
	}
	s.files = []File{first}
	s.content = headerCost(first.Rel) + first.Tokens
	for _, f := range items[1:] {
		out = append(out, fmt.Sprintf("%s (%d tokens)", f.Rel, count(f.Content)))
	}
	s.warn(cut, out, count)
	return s
}

// fit picks what to return so that reserved, headers, contents and warnings
// together stay within budget. Warnings cost tokens too and depend on what
// is cut, so the room left for files shrinks until the warnings fit in what
// it leaves.
func fit(items []File, budget, reserved int, headerCost, count func(string) int) (*Result, error) {
	min := smallest(items, headerCost, count)
	if need := reserved + min.content + min.warningTokens; budget < need {
		return nil, &BudgetTooSmallError{Budget: budget, Min: need}
	}
	pick := min
	for w := 0; w <= budget-reserved; {
		s := choose(items, budget-reserved-w, headerCost, count)
		if s.warningTokens <= w && s.firstLoaded {
			pick = s
			break
		}
		if s.warningTokens <= w { // the first file did not fit: nothing smaller is worth more
			break
		}
		w = s.warningTokens
	}
	return &Result{Files: pick.files, Tokens: reserved + pick.content + pick.warningTokens, Budget: budget,
		Truncated: pick.truncated, Warnings: pick.warnings}, nil
}

// alwaysLoad lists the blocks basic and wide owe the reader: those of
// Layer 1 files the mode does not load whole. A block in a Layer 2 file
// (decisions.md, changelog.md, timeline/, runs/) is never loaded this way:
// Layer 2 is read only on explicit request (spec DiffMem §11.2, §11.4).
func alwaysLoad(req Request) []File {
	whole := loadedWhole(req.Mode)
	if whole == nil {
		return nil
	}
	var out []File
	for _, b := range req.AlwaysLoad {
		if slices.Contains(whole, b.Rel) || !layer1(b.Rel) {
			continue
		}
		out = append(out, File{Rel: AlwaysLoadPrefix + b.Rel, Content: b.Content, Layer: 1})
	}
	return out
}

// layer1 reports whether rel is a Layer 1 file.
func layer1(rel string) bool {
	f, err := memlayout.Resolve("x", rel)
	return err == nil && f.Layer == 1
}

// lastDecisions renders the newest n decisions (spec §11.4: never the whole
// file unasked), newest first.
func lastDecisions(md string, n int) string {
	ds := mdops.LastDecisions(md, n)
	if len(ds) == 0 {
		return ""
	}
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "## %s — %s\n", d.Date.Format("2006-01-02"), d.Title)
		for _, kv := range [][2]string{{"Status", d.Status}, {"Context", d.Context}, {"Decision", d.Decision},
			{"Rationale", d.Rationale}, {"Consequences", d.Consequences}, {"Run", d.RunID}} {
			if kv[1] != "" {
				fmt.Fprintf(&b, "**%s:** %s\n", kv[0], kv[1])
			}
		}
	}
	return b.String()
}

// fitSections keeps the longest prefix of md made of whole sections (a
// section runs from one "## " heading to the next) that fits in max tokens;
// when not even the first section fits, whole lines instead. "" if nothing
// fits.
func fitSections(md string, max int, count func(string) int) string {
	if max <= 0 {
		return ""
	}
	lines := strings.SplitAfter(md, "\n")
	var cuts []int // line indexes where a section starts
	for i, l := range lines {
		if i > 0 && strings.HasPrefix(l, "## ") {
			cuts = append(cuts, i)
		}
	}
	cuts = append(cuts, len(lines))
	if len(cuts) > 1 {
		cuts = cuts[1:] // a title without any section is not worth its tokens
	}
	best := ""
	for _, c := range cuts {
		candidate := strings.Join(lines[:c], "")
		if count(candidate) > max {
			break
		}
		best = candidate
	}
	if best != "" {
		return best
	}
	for i := range lines {
		candidate := strings.Join(lines[:i+1], "")
		if count(candidate) > max {
			break
		}
		best = candidate
	}
	return best
}
