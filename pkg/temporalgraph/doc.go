// Package temporalgraph derives a temporal entity graph from the memory
// monorepo's git history alone: no LLM, no external store, so any replica
// can rebuild exactly the same graph by replaying the same commits.
//
// Everything is deterministic: no clock, and every map is walked in sorted
// order where order matters. The only I/O is the graph's own history, which
// it keeps in a file of its own rather than on the heap (store.go): the
// answers are the same.
//
// # Entity ids
//
// An entity's id is Slug(label), so case, diacritic and punctuation variants
// ("MinIO", "minio", "Mínio ") are one node. The first label seen for an id
// is its Label; later distinct spellings are kept as Aliases (never
// removed).
//
// # Extraction rules (Extract)
//
// Only Markdown files (".md") are read; fenced code blocks are skipped.
// Mentions with Target == "" declare an entity; mentions with a Target are
// also edges EntityID —Relation→ Target.
//
//  1. Wiki links. Every [[Target]] or [[Target|shown text]] yields a
//     refers_to declaration of Target. A prefix person:, project:,
//     artifact:, agent: or concept: (case-insensitive) sets the type and is
//     not part of the label; otherwise the type is "concept". The shown
//     text is display only and does not become an alias. Links whose
//     target has no letters or digits are ignored.
//  2. Facts. In memory/<agent>/facts.md, a fact bullet (mdops.ParseFacts)
//     whose own line links two or more distinct entities yields one
//     relates_to edge per unordered pair, emitted once with
//     EntityID < Target (relates_to is symmetric; readers must treat it as
//     undirected). Links on wrapped or sub-bullet lines only declare.
//  3. Decisions. In memory/<agent>/decisions.md, each entry
//     (mdops.ParseDecisions) is an entity of type "decision" with id
//     "decision-" + Slug(date + " " + title) (cut to Slug's 64 bytes),
//     label the title, and an edge decision —decided_by→ agent. Wiki links
//     in its title and fields (Status, Context, Decision, Rationale,
//     Consequences) yield decision —refers_to→ entity edges, on the line of
//     the link within the entry. Two entries with the same date and title
//     are the same entity.
//  4. Agent folders. Any Markdown file under memory/<agent>/ makes the agent
//     (type "agent", id Slug(folder name), label the folder name) mention
//     every entity the file names: one agent —mentions→ entity edge per
//     wiki-link target and per decision, on its line (the agent itself
//     excepted). Files outside agent folders
//     yield only the mentions of rules 1–3, i.e. declarations without the
//     agent edges.
//
// # Temporal graph (Graph)
//
// ApplyCommit replaces each changed file's contribution. An edge is open
// while at least one source supports it: it opens (ValidFrom = commit time)
// when the first source appears and closes (ValidTo = commit time) when the
// last one disappears, so edits that keep an edge keep its ValidFrom, and
// deleting a file closes the edges only it supported. Entity-Refs of a
// commit message add agent —refers_to→ ref edges whose source is
// "commit:<sha>"; commits are immutable, so those edges never close. An edge
// is visible at t if ValidFrom <= t and (ValidTo is zero or ValidTo > t);
// a zero t means "now" (open edges only).
//
// History tracks facts.md bullets that link an entity: each commit that
// adds or removes such a bullet (compared by text, so moves are not
// changes) records a FactChange with the commit sha, time and proposal id.
package temporalgraph
