package temporalgraph

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const factsMD = `# Facts: curator

## Infrastructure
- [[MinIO]] stores blobs for [[project:Garden Bloom]]
- Bucket [[artifact:minio-bucket|the bucket]] has versioning on
  continued line with [[Ignored Pair]] does not pair

## Люди
- [[person:Олена]] веде [[Пам'ять агента]] разом з [[minio]]

` + "```" + `
- [[Code Sample]] is not a claim
` + "```" + `
`

func TestExtractFacts(t *testing.T) {
	got := Extract("memory/curator/facts.md", factsMD)
	agent := func(target string, line int) Mention {
		return Mention{EntityID: "curator", Label: "curator", Type: TypeAgent, Relation: RelMentions, Target: target, Line: line}
	}
	want := []Mention{
		{EntityID: "minio", Label: "MinIO", Type: TypeConcept, Relation: RelRefersTo, Line: 4},
		{EntityID: "garden-bloom", Label: "Garden Bloom", Type: TypeProject, Relation: RelRefersTo, Line: 4},
		{EntityID: "garden-bloom", Label: "Garden Bloom", Type: TypeProject, Relation: RelRelatesTo, Target: "minio", Line: 4},
		agent("minio", 4), agent("garden-bloom", 4),
		{EntityID: "minio-bucket", Label: "minio-bucket", Type: TypeArtifact, Relation: RelRefersTo, Line: 5},
		agent("minio-bucket", 5),
		{EntityID: "ignored-pair", Label: "Ignored Pair", Type: TypeConcept, Relation: RelRefersTo, Line: 6},
		agent("ignored-pair", 6),
		{EntityID: "олена", Label: "Олена", Type: TypePerson, Relation: RelRefersTo, Line: 9},
		{EntityID: "память-агента", Label: "Пам'ять агента", Type: TypeConcept, Relation: RelRefersTo, Line: 9},
		{EntityID: "minio", Label: "minio", Type: TypeConcept, Relation: RelRefersTo, Line: 9},
		{EntityID: "олена", Label: "Олена", Type: TypePerson, Relation: RelRelatesTo, Target: "память-агента", Line: 9},
		{EntityID: "minio", Label: "minio", Type: TypeConcept, Relation: RelRelatesTo, Target: "олена", Line: 9},
		{EntityID: "minio", Label: "minio", Type: TypeConcept, Relation: RelRelatesTo, Target: "память-агента", Line: 9},
		agent("олена", 9), agent("память-агента", 9), agent("minio", 9),
	}
	require.Equal(t, want, got)
}

const decisionsMD = `# Decisions: curator

## 2026-02-17 — Use MinIO versioning
**Status:** accepted
**Context:** [[MinIO]] loses overwritten blobs.
**Decision:** Turn on versioning for [[artifact:minio-bucket]].
**Run:** run_abc

## 2026-02-18 — Зберігати пам'ять у git
**Статус:** прийнято
**Контекст:** Потрібен аудит для [[Пам'ять агента]].
`

func TestExtractDecisions(t *testing.T) {
	got := Extract("memory/curator/decisions.md", decisionsMD)
	d1 := "decision-2026-02-17-use-minio-versioning"
	d2 := "decision-2026-02-18-зберігати-память-у-git"
	agent := func(target string, line int) Mention {
		return Mention{EntityID: "curator", Label: "curator", Type: TypeAgent, Relation: RelMentions, Target: target, Line: line}
	}
	want := []Mention{
		{EntityID: d1, Label: "Use MinIO versioning", Type: TypeDecision, Relation: RelDecidedBy, Target: "curator", Line: 3},
		agent(d1, 3),
		{EntityID: "minio", Label: "MinIO", Type: TypeConcept, Relation: RelRefersTo, Line: 5},
		{EntityID: d1, Label: "Use MinIO versioning", Type: TypeDecision, Relation: RelRefersTo, Target: "minio", Line: 5},
		agent("minio", 5),
		{EntityID: "minio-bucket", Label: "minio-bucket", Type: TypeArtifact, Relation: RelRefersTo, Line: 6},
		{EntityID: d1, Label: "Use MinIO versioning", Type: TypeDecision, Relation: RelRefersTo, Target: "minio-bucket", Line: 6},
		agent("minio-bucket", 6),
		{EntityID: d2, Label: "Зберігати пам'ять у git", Type: TypeDecision, Relation: RelDecidedBy, Target: "curator", Line: 9},
		agent(d2, 9),
		{EntityID: "память-агента", Label: "Пам'ять агента", Type: TypeConcept, Relation: RelRefersTo, Line: 11},
		{EntityID: d2, Label: "Зберігати пам'ять у git", Type: TypeDecision, Relation: RelRefersTo, Target: "память-агента", Line: 11},
		agent("память-агента", 11),
	}
	require.Equal(t, want, got)
}

func TestExtractOtherFiles(t *testing.T) {
	for _, tc := range []struct {
		name, path, content string
		want                []Mention
	}{
		{"non-markdown", "memory/curator/blob.json", `{"x":"[[MinIO]]"}`, nil},
		{"no links", "memory/curator/snapshot.md", "# Snapshot\nplain text\n", nil},
		{"outside agent folder: no agent edges, no pairs", "docs/facts.md", "- [[A]] and [[B]]\n", []Mention{
			{EntityID: "a", Label: "A", Type: TypeConcept, Relation: RelRefersTo, Line: 1},
			{EntityID: "b", Label: "B", Type: TypeConcept, Relation: RelRefersTo, Line: 1},
		}},
		{"agent links itself: no self edge", "memory/curator/timeline/2026-02-17.md", "ran by [[agent:Curator]]\n", []Mention{
			{EntityID: "curator", Label: "Curator", Type: TypeAgent, Relation: RelRefersTo, Line: 1},
		}},
		{"duplicate link on a line collapses, empty target ignored", "memory/curator/notes.md", "[[X]] [[x]] [[X]] [[!!]]\n", []Mention{
			{EntityID: "x", Label: "X", Type: TypeConcept, Relation: RelRefersTo, Line: 1},
			{EntityID: "x", Label: "x", Type: TypeConcept, Relation: RelRefersTo, Line: 1},
			{EntityID: "curator", Label: "curator", Type: TypeAgent, Relation: RelMentions, Target: "x", Line: 1},
		}},
		{"unknown prefix is part of the label", "README.md", "[[http: thing]]\n", []Mention{
			{EntityID: "http-thing", Label: "http: thing", Type: TypeConcept, Relation: RelRefersTo, Line: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Extract(tc.path, tc.content))
		})
	}
}

func TestExtractDeterministic(t *testing.T) {
	a := Extract("memory/curator/facts.md", factsMD)
	for range 20 {
		require.Equal(t, a, Extract("memory/curator/facts.md", factsMD))
	}
}

// wikiRe is the definition nextWikiLink is held to.
var wikiRe = regexp.MustCompile(`\[\[([^\[\]|\n]+)(?:\|([^\[\]\n]*))?\]\]`)

// nextWikiLink finds exactly the matches of wikiRe, in order, on random
// text dense in brackets, bars and newlines.
func TestNextWikiLinkMatchesRegexp(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	pieces := []string{"[", "]", "[[", "]]", "|", "\n", "a", "é", "person:", " ", "x|y", "\xff"}
	for range 200_000 {
		var b strings.Builder
		for range rng.IntN(16) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		var want []string
		for _, m := range wikiRe.FindAllStringSubmatch(s, -1) {
			want = append(want, m[1], m[2])
		}
		var got []string
		for rest := s; ; {
			target, shown, r, ok := nextWikiLink(rest)
			if !ok {
				break
			}
			got = append(got, target, shown)
			rest = r
		}
		require.Equal(t, want, got, "%q", s)
	}
}

// LinkedIDs names the nodes the graph makes of a text's links: each once,
// in order of first link, typed ids as the graph gives them.
func TestLinkedIDs(t *testing.T) {
	require.Equal(t, []string{"minio", "go-testing", "episode-ep-1"},
		LinkedIDs("- [[MinIO]] replaced [[skill:Go Testing]] in [[episode:ep-1]]; see [[minio|the store]]"))
	require.Empty(t, LinkedIDs("no links, only [brackets] and [[ ]]"))
}
