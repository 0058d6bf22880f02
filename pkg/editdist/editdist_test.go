package editdist

import "testing"

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"maxTokns", "maxTokens", 1}, {"flaw", "lawn", 2}, {"same", "same", 0},
	} {
		if got := Levenshtein([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if got := Levenshtein([]rune("факт"), []rune("фактів")); got != 2 {
		t.Errorf("runes: got %d, want 2", got)
	}
}
