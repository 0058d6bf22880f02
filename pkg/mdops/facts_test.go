package mdops

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendFacts(t *testing.T) {
	const base = "# Facts: a1\n\n## Domain\n- d1\n\n## Технічні знання\n- t1\n\n## Other\ntext kept\n"
	for _, tc := range []struct {
		name, md, section, content string
		want                       string
		added                      int
	}{
		{
			name: "empty file is created", md: "", section: "Технічні знання", content: "MinIO has versioning",
			want:  "# Facts: a1\n\n## Технічні знання\n- MinIO has versioning\n",
			added: 1,
		},
		{
			name: "whitespace-only file is created", md: " \n\n", section: "Domain", content: "x",
			want:  "# Facts: a1\n\n## Domain\n- x\n",
			added: 1,
		},
		{
			name: "append to end of existing section", md: base, section: "Domain", content: "d2",
			want:  "# Facts: a1\n\n## Domain\n- d1\n- d2\n\n## Технічні знання\n- t1\n\n## Other\ntext kept\n",
			added: 1,
		},
		{
			name: "cyrillic section matched case-insensitively", md: base, section: "  ТЕХНІЧНІ знання ", content: "t2\nt3",
			want:  "# Facts: a1\n\n## Domain\n- d1\n\n## Технічні знання\n- t1\n- t2\n- t3\n\n## Other\ntext kept\n",
			added: 2,
		},
		{
			name: "missing section created at end", md: base, section: "Проєктний контекст", content: "Фаза 1 почалась",
			want:  base + "\n## Проєктний контекст\n- Фаза 1 почалась\n",
			added: 1,
		},
		{
			name: "bullets kept, star normalised, blanks skipped", md: base, section: "Domain", content: "- a\n\n* b\n  c  \n+ d\n",
			want:  "# Facts: a1\n\n## Domain\n- d1\n- a\n- b\n- c\n- d\n\n## Технічні знання\n- t1\n\n## Other\ntext kept\n",
			added: 4,
		},
		{
			name: "duplicates anywhere in the file and in content skipped", md: base, section: "Domain", content: "t1\n- d1\nnew\nnew",
			want:  "# Facts: a1\n\n## Domain\n- d1\n- new\n\n## Технічні знання\n- t1\n\n## Other\ntext kept\n",
			added: 1,
		},
		{
			name: "all duplicates: unchanged", md: base, section: "Missing", content: "d1\nt1",
			want:  base,
			added: 0,
		},
		{
			name: "empty section body", md: "# Facts: a1\n\n## Empty\n\n## Next\n- n\n", section: "empty", content: "e",
			want:  "# Facts: a1\n\n## Empty\n- e\n\n## Next\n- n\n",
			added: 1,
		},
		{
			name: "html stripped, code span kept", md: base, section: "Domain", content: "use <b>bold</b> and `<i>`",
			want:  "# Facts: a1\n\n## Domain\n- d1\n- use bold and `<i>`\n\n## Технічні знання\n- t1\n\n## Other\ntext kept\n",
			added: 1,
		},
		{
			name: "crlf input normalised", md: "# Facts: a1\r\n\r\n## Domain\r\n- d1\r\n", section: "Domain", content: "d2\r\n",
			want:  "# Facts: a1\n\n## Domain\n- d1\n- d2\n",
			added: 1,
		},
		{
			name: "subsection stays inside section", md: "# Facts: a1\n\n## Domain\n- d1\n### Sub\n- s1\n\n## Next\n", section: "Domain", content: "d2",
			want:  "# Facts: a1\n\n## Domain\n- d1\n### Sub\n- s1\n- d2\n\n## Next\n",
			added: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, added, err := AppendFacts(tc.md, "a1", tc.section, tc.content)
			require.NoError(t, err)
			require.Equal(t, tc.want, out)
			require.Equal(t, tc.added, added)
			requireFile(t, out)

			again, added2, err := AppendFacts(out, "a1", tc.section, tc.content)
			require.NoError(t, err)
			require.Equal(t, out, again, "appending the same content twice must be a no-op")
			require.Zero(t, added2)
		})
	}
}

func TestAppendFactsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, section, content string
		err                    error
	}{
		{"empty content", "Domain", "", ErrBadContent},
		{"blank content", "Domain", " \n\n- \n", ErrBadContent},
		{"heading in content", "Domain", "fact\n## Injected section", ErrBadContent},
		{"heading after bullet", "Domain", "- # big", ErrBadContent},
		{"hashtag line", "Domain", "#hashtag", ErrBadContent},
		{"empty section", " ", "x", ErrBadContent},
		{"section with hash", "#Domain", "x", ErrBadContent},
		{"script", "Domain", "<script>alert(1)</script>", ErrScript},
		{"script in section", "<script>", "x", ErrScript},
		{"bad utf8", "Domain", "\xff", ErrInvalidUTF8},
		{"nul", "Domain", "a\x00", ErrNUL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, added, err := AppendFacts("# Facts: a1\n", "a1", tc.section, tc.content)
			require.ErrorIs(t, err, tc.err)
			require.Empty(t, out)
			require.Zero(t, added)
		})
	}
}

func TestParseFacts(t *testing.T) {
	got := ParseFacts(readTestdata(t, "facts.md"))
	require.Equal(t, []Fact{
		{Section: "Домен", Text: "Garden Bloom is a digital garden: notes are published from an Obsidian vault", Line: 4},
		{Section: "Домен", Text: "Notes move through the states seed → sprout → evergreen", Line: 5, More: []string{"  - a note becomes evergreen only after human review"}},
		{Section: "Технічні знання", Text: "MinIO bucket `mcpstorage` has object versioning enabled", Line: 9},
		{Section: "Технічні знання", Text: "The gateway is a Cloudflare Worker; it applies proposals as one git commit", Line: 10},
		{Section: "Технічні знання", Text: "Example config (kept verbatim):", Line: 11},
		{Section: "Проєктний контекст", Text: "Phase 1 of the memory migration started on 2026-02-10", Line: 19},
	}, got)

	require.Nil(t, ParseFacts(""))
	require.Equal(t, []Fact{{Section: "", Text: "loose", Line: 2}, {Section: "S", Text: "x", Line: 4}},
		ParseFacts("# Facts: a\n- loose\n## S\n* x\n-not a bullet\n---\n"))
}

func TestRemoveFact(t *testing.T) {
	const md = "# Facts: a1\n\n## Domain\n- d1\n- d2\n  - detail of d2\n  wrapped\n- d1\n\n## Empty soon\n- only\n"
	for _, tc := range []struct{ name, line, want string }{
		{"plain", "d1", "# Facts: a1\n\n## Domain\n- d2\n  - detail of d2\n  wrapped\n- d1\n\n## Empty soon\n- only\n"},
		{"with marker and spaces", "  - d1  ", "# Facts: a1\n\n## Domain\n- d2\n  - detail of d2\n  wrapped\n- d1\n\n## Empty soon\n- only\n"},
		{"with continuation lines", "d2", "# Facts: a1\n\n## Domain\n- d1\n- d1\n\n## Empty soon\n- only\n"},
		{"section heading stays", "only", "# Facts: a1\n\n## Domain\n- d1\n- d2\n  - detail of d2\n  wrapped\n- d1\n\n## Empty soon\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := RemoveFact(md, tc.line)
			require.NoError(t, err)
			require.Equal(t, tc.want, out)
			requireFile(t, out)
		})
	}

	_, err := RemoveFact(md, "missing")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = RemoveFact(md, "detail of d2")
	require.ErrorIs(t, err, ErrNotFound, "sub-bullets are not facts")
	_, err = RemoveFact(md, "D1")
	require.ErrorIs(t, err, ErrNotFound, "comparison is exact")
	_, err = RemoveFact(md, " - ")
	require.ErrorIs(t, err, ErrBadContent)
	_, err = RemoveFact("```\n- code\n```\n", "code")
	require.ErrorIs(t, err, ErrNotFound, "bullets in code are not facts")
}

func TestFactsGolden(t *testing.T) {
	md := readTestdata(t, "facts.md")
	out, added, err := AppendFacts(md, "garden-bloom-curator", "технічні знання",
		"- Proposals are applied with optimistic locking on meta.json version\n* MinIO bucket `mcpstorage` has object versioning enabled")
	require.NoError(t, err)
	require.Equal(t, 1, added)
	out, added, err = AppendFacts(out, "garden-bloom-curator", "People", "Олена owns the tag taxonomy")
	require.NoError(t, err)
	require.Equal(t, 1, added)
	out, err = RemoveFact(out, "Notes move through the states seed → sprout → evergreen")
	require.NoError(t, err)
	requireFile(t, out)
	golden(t, "facts.golden.md", out)
}
