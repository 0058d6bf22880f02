// Package propdiff renders the diff a proposal would commit: the write
// plane's own plan (pkg/applyplan: the updates, eviction, meta.json,
// changelog and timeline) computed on the agent's current files, then each
// changed file as a unified diff (pkg/memdiff, git's format). It is what
// `memctl proposals show` prints for a proposal not applied yet; the files
// come from the read API, so the diff is the one the commit would make if
// applied now.
package propdiff

import (
	"slices"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/applyplan"
	"github.com/garden-bloom/memory/pkg/memdiff"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// FileDiff is one file's change.
type FileDiff struct {
	// File is relative to the agent folder.
	File string `json:"file"`
	// Bookkeeping is true for meta.json, changelog.md and timeline/…,
	// which every commit updates.
	Bookkeeping bool   `json:"bookkeeping"`
	Diff        string `json:"diff"`
	Added       int    `json:"added"`
	Deleted     int    `json:"deleted"`
}

// Result is a rendered proposal.
type Result struct {
	Files []FileDiff `json:"files"`
	// EvictedFacts and FrozenLoops are what the commit would move to Layer 2.
	EvictedFacts []string `json:"evictedFacts,omitempty"`
	FrozenLoops  []string `json:"frozenLoops,omitempty"`
	Warnings     []string `json:"warnings,omitempty"`
}

// Render plans p on the files read returns, at time now.
func Render(p *memoryv1.Proposal, read applyplan.Reader, now time.Time) (*Result, error) {
	counter, err := tokens.New("")
	if err != nil {
		return nil, err
	}
	plan, err := applyplan.Build(applyplan.Input{Proposal: p, Read: read, Now: now, Counter: counter})
	if err != nil {
		return nil, err
	}
	res := &Result{EvictedFacts: plan.EvictedFacts, FrozenLoops: plan.FrozenLoops, Warnings: plan.Warnings}
	names := make([]string, 0, len(plan.Changes)+len(plan.Deleted))
	for rel := range plan.Changes {
		names = append(names, rel)
	}
	names = append(names, plan.Deleted...)
	slices.SortFunc(names, func(a, b string) int {
		// The proposal's own files first, bookkeeping last.
		if ka, kb := bookkeeping(a), bookkeeping(b); ka != kb {
			if ka {
				return 1
			}
			return -1
		}
		if a < b {
			return -1
		}
		if a > b {
			return 1
		}
		return 0
	})
	for _, rel := range names {
		before, ok, err := read(rel)
		if err != nil {
			return nil, err
		}
		var b, a *string
		if ok {
			b = &before
		}
		if after, changed := plan.Changes[rel]; changed {
			a = &after
		}
		diff, added, deleted := memdiff.Unified(rel, b, a, 3)
		if diff == "" {
			continue
		}
		res.Files = append(res.Files, FileDiff{File: rel, Bookkeeping: bookkeeping(rel), Diff: diff, Added: added, Deleted: deleted})
	}
	return res, nil
}

func bookkeeping(rel string) bool {
	if rel == memlayout.MetaFile || rel == memlayout.ChangelogFile {
		return true
	}
	f, err := memlayout.Resolve("x", rel)
	return err == nil && f.Kind == memlayout.KindTimeline
}
