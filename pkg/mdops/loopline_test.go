package mdops

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// loopLine and loopIDPrefix must match exactly what the regexps they
// replace matched, for any text.
func TestLoopMatchersAgreeWithTheirRegexps(t *testing.T) {
	lineRe := regexp.MustCompile(`^[-*+] \[([ xX])\] (.*)$`)
	idRe := regexp.MustCompile(`^(loop_[0-9]+): (.*)$`)
	pieces := []string{"- ", "* ", "+ ", "-", "[", "]", " ", "[ ]", "[x]", "[X]", "[y]", "- [ ] ", "* [x] ", "loop_", "loop_12", "7", ": ", ":", "\n", "\r", "\t", "é", "\xff", "text", " — opened 2026-01-02"}
	r := rand.New(rand.NewPCG(9, 4))
	for range 300_000 {
		var b strings.Builder
		for range r.IntN(7) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()

		mark, body, ok := loopLine(s)
		m := lineRe.FindStringSubmatch(s)
		if ok != (m != nil) || ok && (string(mark) != m[1] || body != m[2]) {
			t.Fatalf("loopLine(%q) = %q, %q, %v; the regexp says %q", s, mark, body, ok, m)
		}
		id, rest, ok := loopIDPrefix(s)
		m = idRe.FindStringSubmatch(s)
		if ok != (m != nil) || ok && (id != m[1] || rest != m[2]) {
			t.Fatalf("loopIDPrefix(%q) = %q, %q, %v; the regexp says %q", s, id, rest, ok, m)
		}
	}
}
