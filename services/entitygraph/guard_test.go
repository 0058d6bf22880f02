package entitygraph

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// sameFact must agree with comparing normalizeFact's results, for any text:
// case, runs of whitespace, the bullet marker and non-ASCII letters whose
// lower case has another length.
func TestSameFactAgreesWithNormalizeFact(t *testing.T) {
	pieces := []string{"a", "B", "fact", "Fact", "FACT", " ", "  ", "\t", "\n", "- ", "-", "İ", "ẞ", "Σ", "ς", "é", "É", "K", "\u2028", "\u00a0", "ǅ", "x1", "\xff"}
	r := rand.New(rand.NewPCG(3, 5))
	gen := func() string {
		var b strings.Builder
		for range r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for range 200_000 {
		a, b := gen(), gen()
		if r.IntN(3) == 0 { // make equal-after-normalising pairs common
			b = strings.ToUpper(a) + " "
		}
		norm := normalizeFact(b)
		if got, want := sameFact(a, norm), normalizeFact(a) == norm; got != want {
			t.Fatalf("sameFact(%q, %q) = %v, want %v", a, norm, got, want)
		}
	}
}
