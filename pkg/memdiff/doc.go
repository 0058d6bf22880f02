// Package memdiff computes what changed in an agent's memory between two
// versions of its Markdown files, for the memory-diff tool: a git-style
// unified diff of any file (Unified), a structured list of the facts, loops
// and decisions that were added, removed or changed (Items), and a one-line
// summary (Summary).
//
// Every function is pure and deterministic: no I/O, no clock, no maps
// iterated into the output, so the same two versions always render the same
// report, on any replica, and a report can be compared or cached by its
// bytes.
//
// Unified reproduces what `git diff` prints for the same two blobs with
// default settings (Myers algorithm, indent heuristic, three lines of
// context when asked for three), so what a reviewer sees in memory-diff is
// what they see in `git log -p` on the memory repository.
package memdiff
