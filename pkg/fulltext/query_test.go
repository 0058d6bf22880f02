package fulltext

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseQuery(t *testing.T) {
	for text, want := range map[string]parsedQuery{
		`minio retention`:                {words: "minio retention"},
		`"exact phrase"`:                 {phrases: []string{"exact phrase"}},
		`a "b c" d "e"`:                  {words: "a   d", phrases: []string{"b c", "e"}},
		`an "unclosed quote`:             {words: `an "unclosed quote`},
		`AND OR NOT -x +y f:v * (z)`:     {words: `AND OR NOT -x +y f:v * (z)`},
		`what did "Caroline" say -- why`: {words: "what did   say -- why", phrases: []string{"Caroline"}},
	} {
		require.Equal(t, want, parseQuery(text), text)
	}
}

// NaturalQuery leaves no phrase to require and keeps every word.
func TestNaturalQuery(t *testing.T) {
	ix, err := Open(t.TempDir())
	require.NoError(t, err)
	defer func() { require.NoError(t, ix.Close()) }()
	for _, text := range []string{`"exact phrase"`, `a "b c" d "e`, `what did "Caroline" say -- and why?`, `"""`, `AND OR NOT`, `kind:facts -x +y *`} {
		q := NaturalQuery(text)
		require.Empty(t, parseQuery(q).phrases, text)
		require.Len(t, q, len(text))
		require.Equal(t, ix.terms(ix.analyzer, NaturalQuery(text)), ix.terms(ix.analyzer, text), text)
	}

	require.NoError(t, ix.Apply(context.Background(), Batch{Upserts: []File{
		file("memory/a/facts.md", "a", 1, "facts", "c", "# F\n\n## D\n- the exact phrase\n"),
		file("memory/b/facts.md", "b", 1, "facts", "c", "# F\n\n## D\n- a phrase, not exact\n"),
	}}))
	res, err := ix.Search(context.Background(), Query{Text: `"exact phrase"`})
	require.NoError(t, err)
	require.Equal(t, []string{"memory/a/facts.md"}, paths(res), "the syntax: a phrase is required")
	res, err = ix.Search(context.Background(), Query{Text: NaturalQuery(`"exact phrase"`)})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"memory/a/facts.md", "memory/b/facts.md"}, paths(res), "natural language: words")
	_, err = ix.Search(context.Background(), Query{Text: NaturalQuery(`AND OR NOT`)})
	require.ErrorIs(t, err, ErrEmptyQuery, "stop words only")
}
