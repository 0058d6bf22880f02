// Package temporalgraph derives a temporal entity graph from the memory
// monorepo's git history alone: no LLM, no external store, so any replica
// can rebuild exactly the same graph by replaying the same commits.
//
// Everything is deterministic: no clock, and every map is walked in sorted
// order where order matters. The only I/O is the graph's own file: its
// history (store.go) and its live state — nodes, open edges, what each file
// contributes now (live.go) — are kept there rather than on the heap, which
// holds what changed since the last flush and a bounded hot set. The
// answers are the same as those of the graph kept in memory
// (TestRebuildEqualsInMemoryReference).
//
// # Entity ids
//
// An entity's id is Slug(label), so case, diacritic and punctuation variants
// ("MinIO", "minio", "Mínio ") are one node. The first label seen for an id
// is its Label; later distinct spellings are kept as Aliases (never
// removed).
//
// The types that exist only through episodes — episode, task, outcome,
// failure_mode, fix, context, test, environment — carry their type in
// their id, so an outcome "failure" or a context "backend" is not the
// plain concept of that name: "<prefix>-" + Slug(target) (prefixes
// "episode", "task", "outcome", "failure-mode", "fix", "context", "test",
// "environment"), unless Slug(target) starts with that prefix and "-"
// already ([[task:task-1a2b3c4d]] is task-1a2b3c4d, not
// task-task-1a2b3c4d), cut like any slug. Skills and artifacts keep the
// plain slug ([[skill:Go Testing]] is go-testing).
//
// # Extraction rules (Extract)
//
// Only Markdown files (".md") are read; fenced code blocks are skipped.
// Mentions with Target == "" declare an entity; mentions with a Target are
// also edges EntityID —Relation→ Target.
//
//  1. Wiki links. Every [[Target]] or [[Target|shown text]] yields a
//     refers_to declaration of Target. A prefix (case-insensitive) sets
//     the type and is not part of the label: person:, project:,
//     artifact:, agent:, concept:, and the episode types skill:, episode:,
//     task:, outcome:, failure-mode: (or failure_mode:), fix:, context:,
//     test:, environment:; otherwise the type is "concept". The shown
//     text is display only and does not become an alias, except for a
//     task, whose target is a hash: its shown text (the task) is its
//     label. Links whose target has no letters or digits are ignored.
//     Ids: see Entity ids above, and for the episode-only types below.
//  2. Contexts. A context target is a path, levels separated by "/" or
//     ":" (ai-skills-memory-protocol §4.2.1): [[context:a/b/c]] declares
//     the contexts a, a/b and a/b/c (labels the paths) and yields
//     a/b/c —child_of→ a/b —child_of→ a, on the link's line.
//  3. Facts. In memory/<agent>/facts.md, a fact bullet (mdops.ParseFacts)
//     whose own line links two or more distinct entities yields one
//     relates_to edge per unordered pair, emitted once with
//     EntityID < Target (relates_to is symmetric; readers must treat it as
//     undirected). Links on wrapped or sub-bullet lines only declare.
//  4. Decisions. In memory/<agent>/decisions.md, each entry
//     (mdops.ParseDecisions) is an entity of type "decision" with id
//     "decision-" + Slug(date + " " + title) (cut to Slug's 64 bytes),
//     label the title, and an edge decision —decided_by→ agent. Wiki links
//     in its title and fields (Status, Context, Decision, Rationale,
//     Consequences) yield decision —refers_to→ entity edges, on the line of
//     the link within the entry. Two entries with the same date and title
//     are the same entity.
//  5. Episode run files. A file under memory/<agent>/runs/ whose header
//     (the lines before its first "## " heading) has a
//     "- **Episode:** [[episode:…]]" line is an episode (the format
//     IngestEpisode writes, docs/episodes.md). Its header's field lines
//     yield the typed edges of ai-skills-memory-protocol §4.2, each on its
//     line, from links of the field's type only (episodeMentions):
//     Skills used → episode —used_skill→ skill; Artifacts touched →
//     —touched_artifact→ artifact; Outcome → —resulted_in→ outcome;
//     Failure mode → outcome —has_failure_mode→ failure mode; Fix →
//     failure mode —mitigated_by→ fix; Context → —in_context→ context;
//     Tests → —ran_test→ test; Environment → —ran_in→ environment;
//     Task → task —has_episode→ episode. No relates_to pairs.
//  6. Agent folders. Any Markdown file under memory/<agent>/ makes the agent
//     (type "agent", id Slug(folder name), label the folder name) mention
//     every entity the file names: one agent —mentions→ entity edge per
//     wiki-link target, per ancestor of a context path and per decision,
//     on its line (the agent itself excepted). Files outside agent folders
//     yield only the mentions of rules 1–4, i.e. declarations without the
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
