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

// CollectAlwaysLoad reads every Markdown file of the agent and returns the
// ALWAYS_LOAD blocks of each, in file order.
func CollectAlwaysLoad(src Source) ([]Block, error) {
	files, err := src.List("")
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var out []Block
	for _, rel := range files {
		if !strings.HasSuffix(rel, ".md") {
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
func Read(src Source, req Request) (*Result, error) {
	budget := Max(req.Mode)
	if req.MaxTokens > 0 && req.MaxTokens < budget {
		budget = req.MaxTokens
	}
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
	res := &Result{Budget: budget, Tokens: req.Reserved}
	add := func(f File) {
		left := budget - res.Tokens
		if f.Tokens > left {
			cut := fitSections(f.Content, left, src.Count)
			if cut == "" {
				res.Truncated = true
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s left out: %d tokens do not fit the %d left of the budget", f.Rel, f.Tokens, left))
				return
			}
			res.Truncated = true
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s cut at a section boundary to fit the budget", f.Rel))
			f.Content, f.Tokens, f.Truncated = cut, src.Count(cut), true
		}
		res.Files = append(res.Files, f)
		res.Tokens += f.Tokens
	}
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
		add(File{Rel: rel, Content: content, Tokens: src.Count(content), Layer: layer})
		if rel == memlayout.SnapshotFile {
			addAlwaysLoad(req, add, src.Count)
			blocksAdded = true
		}
	}
	if !blocksAdded {
		addAlwaysLoad(req, add, src.Count)
	}
	for _, f := range req.Extra {
		if !excluded(f.Rel, req.Exclude) {
			f.Tokens = src.Count(f.Content)
			add(f)
		}
	}
	return res, nil
}

// addAlwaysLoad adds the blocks basic and wide owe the reader.
func addAlwaysLoad(req Request, add func(File), count func(string) int) {
	whole := loadedWhole(req.Mode)
	if whole == nil {
		return
	}
	for _, b := range req.AlwaysLoad {
		if slices.Contains(whole, b.Rel) {
			continue
		}
		layer := 2
		if f, err := memlayout.Resolve("x", b.Rel); err == nil {
			layer = f.Layer
		}
		add(File{Rel: AlwaysLoadPrefix + b.Rel, Content: b.Content, Tokens: count(b.Content), Layer: layer})
	}
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
