// Package mdops validates agent-written Markdown and applies memory
// operations to the Markdown files of an agent's memory
// (memory/<agentId>/…, spec agent-memory-git-diffmem-v1 §3.2 and §11.3).
//
// Every function is pure and deterministic: no I/O, no clock (times are
// passed in and rendered in UTC), no randomness, so the write plane can
// re-apply a proposal on a retry or on another replica and get byte-identical
// files, hence identical git commits. Operations that add content are
// idempotent where a retry could otherwise duplicate it (facts, loops,
// decisions, changelog and timeline entries); removals report ErrNotFound
// on a second attempt instead.
//
// Outputs are whole files using "\n" line endings with exactly one trailing
// newline (Sanitize, which cleans fragments, keeps its input's ending).
// Anything the operations do not understand — unknown sections, free text,
// HTML comments a human put there, code blocks — is preserved verbatim; only
// the lines an operation targets change. New files get English headings
// ("# Facts: <agentId>", "## Closed", …); the spec's Ukrainian headings and
// labels in existing files are recognised where they carry meaning.
//
// Agent-supplied text (fact content, loop text and resolution, decision
// fields, section titles) is run through Sanitize inside the operations and
// folded or checked so it cannot add headings or break the file structure.
// Text the write plane generates itself (changelog and timeline lines,
// eviction records) is only folded to one line; sanitise any agent text you
// put into it first.
//
// File formats in brief (details at each function):
//
//	facts.md        # Facts: <agentId> / ## <Section> / - <fact>
//	open_loops.md   # Open Loops: <agentId> / ## Critical|Open|Waiting|Closed /
//	                - [ ] loop_003: <text> — opened 2026-02-15 | priority: low
//	                - [x] loop_003: <text> — closed 2026-02-16 | run_abc | opened 2026-02-15 | priority: low | resolution: <text>
//	decisions.md    # Decisions: <agentId> / ## 2026-02-17 — <title> / **Status:** … **Context:** … **Decision:** …
//	                **Rationale:** … **Consequences:** … **Run:** run_<id> (oldest first);
//	                appendix sections ## Evicted facts, ## Frozen loops
//	changelog.md    # Changelog: <agentId> / ## 2026-02-17 / ### 14:30 — run_<id> / proposal_<id> / - **facts.md:** … (newest first, 30 kept)
//	timeline/D.md   # Timeline: <agentId> / 2026-02-17 / ## Runs / ### 09:15 — run_<id> / **Proposal:** … **Status:** … **Task:** … **Result:** …
//	snapshot.md     # <title> … (replaced wholesale; see CheckSnapshot)
package mdops
