package temporalgraph

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"MinIO", "minio"},
		{"minio", "minio"},
		{"Mínio ", "minio"},
		{"Proposal Lifecycle", "proposal-lifecycle"},
		{"  --Proposal   Lifecycle!!", "proposal-lifecycle"},
		{"Пам'ять агента", "память-агента"},
		{"Пам’ять агента", "память-агента"},
		{"agent's memory", "agents-memory"},
		{"Київ", "київ"},       // ї is a letter of its own, not і + diaeresis
		{"Йогурт", "йогурт"},   // й survives NFKD + recomposition
		{"па́м'ять", "память"}, // stress accent dropped
		{"ﬁle №1", "file-no1"}, // NFKD compatibility forms
		{"Crème Brûlée", "creme-brulee"},
		{"S3 v2.0", "s3-v2-0"},
		{"!!!", ""},
		{"", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got := Slug(tc.in)
			require.Equal(t, tc.want, got)
			require.Equal(t, got, Slug(got), "idempotent")
		})
	}
}

func TestSlugMaxLength(t *testing.T) {
	for _, in := range []string{strings.Repeat("a", 100), strings.Repeat("я", 100), strings.Repeat("ab ", 40)} {
		got := Slug(in)
		require.LessOrEqual(t, len(got), 64)
		require.True(t, strings.ToValidUTF8(got, "?") == got, "rune boundary")
		require.False(t, strings.HasSuffix(got, "-"))
		require.Equal(t, got, Slug(got))
	}
	require.Equal(t, 64, len(Slug(strings.Repeat("я", 100)))) // 32 two-byte runes
}

// The ASCII fast path gives what the Unicode path gives, on random ASCII
// labels rich in separators, apostrophes, case and the 64-byte cut.
func TestSlugASCIIMatchesUnicodePath(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const alphabet = "aZ09 -_'`.:/|\t[]Ab"
	for range 200_000 {
		b := make([]byte, rng.IntN(90))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = byte(rng.IntN(128))
			} else {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		require.Equal(t, slugUnicode(string(b)), slugASCII(string(b)), "%q", b)
	}
}
