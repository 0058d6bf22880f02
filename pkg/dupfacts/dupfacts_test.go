package dupfacts

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// sameFact must agree with comparing Normalize's results, for any text:
// case, runs of whitespace, the bullet marker and non-ASCII letters whose
// lower case has another length.
func TestSameFactAgreesWithNormalize(t *testing.T) {
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
		norm := Normalize(b)
		if got, want := sameFact(a, norm), Normalize(a) == norm; got != want {
			t.Fatalf("sameFact(%q, %q) = %v, want %v", a, norm, got, want)
		}
	}
}

func TestFind(t *testing.T) {
	facts := "# Facts: a\n\n## D\n- Backups run nightly\n- [[Redis]] caches sessions\n"
	reads := 0
	read := func() (string, error) { reads++; return facts, nil }
	appendTo := func(file, content string) *memoryv1.FileUpdate {
		return &memoryv1.FileUpdate{File: file, Operation: memoryv1.Operation_OPERATION_APPEND, Content: content}
	}
	updates := []*memoryv1.FileUpdate{
		appendTo("snapshot.md", "- Backups run nightly"), // not facts.md
		{File: "facts.md", Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- Backups run nightly"},
		appendTo("facts.md", "- backups   RUN nightly\n\n- something new\n  - [[redis]] CACHES sessions  "),
	}
	got, err := Find(updates, read)
	if err != nil {
		t.Fatal(err)
	}
	want := []Repeat{
		{Update: 2, Line: "- backups   RUN nightly", Existing: "Backups run nightly"},
		{Update: 2, Line: "- [[redis]] CACHES sessions", Existing: "[[Redis]] caches sessions"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("repeat %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if d := got[0].Detail(); d != `"- backups   RUN nightly" repeats the existing fact "Backups run nightly"` {
		t.Fatalf("detail %q", d)
	}

	// Nothing appended to facts.md: facts.md is not read at all.
	reads = 0
	if got, err := Find(updates[:2], read); err != nil || got != nil || reads != 0 {
		t.Fatalf("Find without appends = %v, %v after %d reads", got, err, reads)
	}
	boom := errors.New("boom")
	if _, err := Find(updates, func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("a read error is returned, got %v", err)
	}
}
