// Package commitmsg writes and reads the memory monorepo's commit messages
// (spec DiffMem §6.2), the audit trail a person reads with `git log`:
//
//	memory-update: <agentId> / run_<id> / proposal_<id>
//
//	Files: facts.md, open_loops.md, snapshot.md
//	Reason: <why>
//	Auto-approved: true
//	evicted: stale-fact
//	Evicted-Fact: <a fact moved to decisions.md, verbatim>
//	Frozen-Loop: loop_003
//
// Parse is the inverse, so the read plane and the write plane's recovery find
// proposal and run ids in history, and any other commit is a human edit.
package commitmsg

import (
	"fmt"
	"strings"
	"unicode"
)

// UpdatePrefix starts the subject of every commit proposal-apply makes.
const UpdatePrefix = "memory-update: "

// InitSubject is the subject of the repository's first commit.
const InitSubject = "init: memory monorepo layout"

// Update describes one applied proposal.
type Update struct {
	AgentID      string
	RunID        string // "run_<id>"
	ProposalID   string // "proposal_<id>"
	Files        []string
	Reason       string
	AutoApproved bool
	// Evicted is set when the commit moved Layer 1 content to Layer 2.
	Evicted bool
	// EvictedFacts and FrozenLoops say exactly what moved (one line each).
	EvictedFacts []string
	FrozenLoops  []string
	// EntityRefs are the proposal's entity references, recorded so the
	// entity graph can be rebuilt from git alone.
	EntityRefs []string
}

// Format renders u as a commit message.
func Format(u Update) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s / %s / %s\n\n", UpdatePrefix, u.AgentID, u.RunID, u.ProposalID)
	fmt.Fprintf(&b, "Files: %s\n", strings.Join(u.Files, ", "))
	fmt.Fprintf(&b, "Reason: %s\n", oneLine(u.Reason))
	fmt.Fprintf(&b, "Auto-approved: %t\n", u.AutoApproved)
	if u.Evicted || len(u.EvictedFacts)+len(u.FrozenLoops) > 0 {
		b.WriteString("evicted: stale-fact\n")
	}
	for _, f := range u.EvictedFacts {
		fmt.Fprintf(&b, "Evicted-Fact: %s\n", flat(f))
	}
	for _, l := range u.FrozenLoops {
		fmt.Fprintf(&b, "Frozen-Loop: %s\n", flat(l))
	}
	if len(u.EntityRefs) > 0 {
		fmt.Fprintf(&b, "Entity-Refs: %s\n", flat(strings.Join(u.EntityRefs, ", ")))
	}
	return b.String()
}

// flat keeps a value on its own line: a line break (or any control
// character) in it could otherwise forge a line of the message that Parse
// believes, such as "human-edit: true" or another "Files:".
func flat(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
}

// oneLine keeps a reason on the Reason: line, whatever the agent sent.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 500 {
		cut := 500
		for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// Parsed is what a commit message says about itself.
type Parsed struct {
	// Update is set for commits made by proposal-apply.
	Update *Update
	// HumanEdit is true for commits made directly with git (spec §6.5):
	// anything that is not a memory-update or the init commit, or that says
	// "human-edit: true".
	HumanEdit bool
}

// Parse reads a commit message.
func Parse(msg string) Parsed {
	lines := strings.Split(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	subject := strings.TrimSpace(lines[0])
	var p Parsed
	for _, l := range lines[1:] {
		if strings.EqualFold(strings.TrimSpace(l), "human-edit: true") {
			p.HumanEdit = true
		}
	}
	if subject == InitSubject {
		return p
	}
	rest, ok := strings.CutPrefix(subject, UpdatePrefix)
	if !ok {
		p.HumanEdit = true
		return p
	}
	parts := strings.Split(rest, " / ")
	if len(parts) != 3 {
		p.HumanEdit = true
		return p
	}
	u := &Update{AgentID: parts[0], RunID: parts[1], ProposalID: parts[2]}
	for _, l := range lines[1:] {
		key, val, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		switch key {
		case "Files":
			u.Files = splitList(val)
		case "Reason":
			u.Reason = val
		case "Auto-approved":
			u.AutoApproved = val == "true"
		case "evicted":
			u.Evicted = true
		case "Evicted-Fact":
			u.EvictedFacts = append(u.EvictedFacts, val)
		case "Frozen-Loop":
			u.FrozenLoops = append(u.FrozenLoops, val)
		case "Entity-Refs":
			u.EntityRefs = splitList(val)
		}
	}
	p.Update = u
	return p
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
