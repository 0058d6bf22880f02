package memdiff

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func ptr(s string) *string { return &s }

// gitHunks runs `git diff --no-index` on the two texts (nil = absent, passed
// as /dev/null) and returns its output from the first hunk on, with the
// function-context text after each hunk header's closing "@@" cut off:
// that is the part Unified must reproduce byte for byte. The repository
// and user configuration are kept out so that nobody's diff.algorithm or
// colour settings change the reference.
func gitHunks(t testing.TB, before, after *string, context int) string {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	arg := func(name string, s *string) string {
		if s == nil {
			return "/dev/null"
		}
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(*s), 0o600))
		return p
	}
	cmd := exec.Command(git, "diff", "--no-index", "--no-color", "--no-ext-diff", "--no-textconv",
		"-U"+strconv.Itoa(context), arg("old", before), arg("new", after))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir, "LC_ALL=C")
	out, err := cmd.Output()
	var exit *exec.ExitError
	differ := errors.As(err, &exit) && exit.ExitCode() == 1 // git diff's answer when the files differ
	if err != nil && !differ {
		t.Fatalf("git diff: %v", err)
	}
	return hunksOnly(string(out))
}

// hunksOnly drops everything before the first hunk header and the
// function context after each "@@ … @@".
func hunksOnly(diff string) string {
	var sb strings.Builder
	in := false
	for _, l := range strings.SplitAfter(diff, "\n") {
		if strings.HasPrefix(l, "@@ ") {
			in = true
			if k := strings.Index(l[3:], " @@"); k >= 0 {
				l = l[:3+k+3] + "\n"
			}
		}
		if in {
			sb.WriteString(l)
		}
	}
	return sb.String()
}

// countLines counts the "+" and "-" lines of the hunks.
func countLines(hunks string) (added, deleted int) {
	for _, l := range strings.Split(hunks, "\n") {
		switch {
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			deleted++
		}
	}
	return added, deleted
}

// lines builds a text with a trailing newline from its lines.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// seq returns "<prefix>1" … "<prefix>n" as lines.
func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i+1)
	}
	return out
}

// with returns a copy of ls with element i replaced by repl (no elements
// for a deletion, several for an insertion around it).
func with(ls []string, i, drop int, repl ...string) []string {
	out := append([]string{}, ls[:i]...)
	out = append(out, repl...)
	return append(out, ls[i+drop:]...)
}

const factsMD = `# Facts: curator

## Infrastructure
- MinIO runs on storage-01
- Backups are nightly at 02:00
- Grafana lives at grafana.local

## People
- Anna owns the tag taxonomy
- Олена відповідає за структуру тегів

## Preferences
- Answers in Ukrainian
`

func TestUnifiedMatchesGit(t *testing.T) {
	base := seq("line ", 20)
	cases := []struct {
		name          string
		before, after *string
		context       int
	}{
		{"add at start", ptr(lines(base...)), ptr(lines(with(base, 0, 0, "new first")...)), 3},
		{"add in middle", ptr(lines(base...)), ptr(lines(with(base, 10, 0, "new a", "new b")...)), 3},
		{"add at end", ptr(lines(base...)), ptr(lines(append(base[:20:20], "new last")...)), 3},
		{"delete", ptr(lines(base...)), ptr(lines(with(base, 5, 2)...)), 3},
		{"delete first", ptr(lines(base...)), ptr(lines(with(base, 0, 1)...)), 3},
		{"delete last", ptr(lines(base...)), ptr(lines(base[:19]...)), 3},
		{"change", ptr(lines(base...)), ptr(lines(with(base, 7, 1, "changed 8")...)), 3},
		{"change two into three", ptr(lines(base...)), ptr(lines(with(base, 7, 2, "x", "y", "z")...)), 3},
		{"hunks far apart", ptr(lines(base...)), ptr(lines(with(with(base, 17, 1, "B"), 1, 1, "A")...)), 3},
		{"gap of 7 splits", ptr(lines(base...)), ptr(lines(with(with(base, 10, 1, "B"), 2, 1, "A")...)), 3},
		{"gap of 6 merges", ptr(lines(base...)), ptr(lines(with(with(base, 9, 1, "B"), 2, 1, "A")...)), 3},
		{"context 0", ptr(lines(base...)), ptr(lines(with(with(base, 9, 1, "B"), 2, 0, "A")...)), 0},
		{"context 1 merge", ptr(lines(base...)), ptr(lines(with(with(base, 5, 1, "B"), 2, 1, "A")...)), 1},
		{"context 10", ptr(lines(base...)), ptr(lines(with(base, 9, 1, "B")...)), 10},
		{"empty to text", ptr(""), ptr(lines("a", "b")), 3},
		{"text to empty", ptr(lines("a", "b")), ptr(""), 3},
		{"absent to text", nil, ptr(lines("a", "b", "c")), 3},
		{"text to absent", ptr(lines("a")), nil, 3},
		{"absent to text without newline", nil, ptr("only"), 3},
		{"no newline added at end", ptr("a\nb"), ptr("a\nb\n"), 3},
		{"no newline removed at end", ptr("a\nb\n"), ptr("a\nb"), 3},
		{"no newline on both, last changed", ptr("a\nb"), ptr("a\nc"), 3},
		{"no newline on both, last kept", ptr(lines(base...) + "tail"), ptr(lines(with(base, 18, 1, "X")...) + "tail"), 3},
		{"no newline, append", ptr("a\nb"), ptr("a\nb\nc"), 3},
		{"crlf", ptr("a\r\nb\r\nc\r\n"), ptr("a\r\nB\r\nc\r\n"), 3},
		{"cyrillic", ptr(lines("# Факти", "", "## Люди", "- Олена веде теги", "- Анна")),
			ptr(lines("# Факти", "", "## Люди", "- Олена веде структуру тегів", "- Анна", "- Богдан")), 3},
		{"fact added to section", ptr(factsMD), ptr(strings.Replace(factsMD, "- Grafana lives at grafana.local\n",
			"- Grafana lives at grafana.local\n- Loki keeps logs for 14 days\n", 1)), 3},
		{"section added in the middle", ptr(factsMD), ptr(strings.Replace(factsMD, "## People\n",
			"## Services\n- n8n on port 5678\n\n## People\n", 1)), 3},
		{"section added at end", ptr(factsMD), ptr(factsMD + "\n## Tools\n- ripgrep\n"), 3},
		{"section removed", ptr(factsMD), ptr(strings.Replace(factsMD, "## People\n- Anna owns the tag taxonomy\n- Олена відповідає за структуру тегів\n\n", "", 1)), 3},
		{"fact moved", ptr(factsMD), ptr(strings.Replace(strings.Replace(factsMD, "- Anna owns the tag taxonomy\n", "", 1),
			"- Answers in Ukrainian\n", "- Answers in Ukrainian\n- Anna owns the tag taxonomy\n", 1)), 3},
		{"swap", ptr(lines("a", "b")), ptr(lines("b", "a")), 3},
		{"repeated blank lines", ptr(lines("a", "", "b", "", "c")), ptr(lines("a", "", "b", "", "x", "", "c")), 3},
		{"indented block", ptr(lines("func f() {", "\tif x {", "\t\ty()", "\t}", "}")),
			ptr(lines("func f() {", "\tif x {", "\t\ty()", "\t}", "\tif z {", "\t\ty()", "\t}", "}")), 3},
		{"rewrite everything", ptr(lines("a", "", "b", "", "c", "", "d")), ptr(lines("p", "", "q", "", "r", "", "s")), 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, added, deleted := Unified("facts.md", tc.before, tc.after, tc.context)
			want := gitHunks(t, tc.before, tc.after, tc.context)
			require.NotEmpty(t, want, "the case must change something")
			head, body, ok := cutHeader(got)
			require.True(t, ok, "no ---/+++ header in %q", got)
			require.Equal(t, want, body)
			wa, wd := countLines(want)
			require.Equal(t, wa, added)
			require.Equal(t, wd, deleted)
			oldName, newName := "--- a/facts.md\n", "+++ b/facts.md\n"
			if tc.before == nil {
				oldName = "--- /dev/null\n"
			}
			if tc.after == nil {
				newName = "+++ /dev/null\n"
			}
			require.Equal(t, oldName+newName, head)
		})
	}
}

// cutHeader splits our output into the ---/+++ header and the hunks.
func cutHeader(diff string) (head, body string, ok bool) {
	ls := strings.SplitAfterN(diff, "\n", 3)
	if len(ls) < 3 || !strings.HasPrefix(ls[0], "--- ") || !strings.HasPrefix(ls[1], "+++ ") {
		return "", "", false
	}
	return ls[0] + ls[1], ls[2], true
}

func TestUnifiedExactOutput(t *testing.T) {
	// Literal expectations pin the format independently of git.
	cases := []struct {
		name, path    string
		before, after *string
		context       int
		want          string
		added, del    int
	}{
		{"one line changed", "open_loops.md", ptr("a\nb\nc\n"), ptr("a\nB\nc\n"), 3,
			"--- a/open_loops.md\n+++ b/open_loops.md\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", 1, 1},
		{"single line counts omitted", "x.md", ptr("x\n"), ptr("y\n"), 3,
			"--- a/x.md\n+++ b/x.md\n@@ -1 +1 @@\n-x\n+y\n", 1, 1},
		{"created", "facts.md", nil, ptr("a\n"), 3,
			"--- /dev/null\n+++ b/facts.md\n@@ -0,0 +1 @@\n+a\n", 1, 0},
		{"deleted", "facts.md", ptr("a\nb\n"), nil, 3,
			"--- a/facts.md\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n", 0, 2},
		{"emptied", "facts.md", ptr("a\n"), ptr(""), 3,
			"--- a/facts.md\n+++ b/facts.md\n@@ -1 +0,0 @@\n-a\n", 0, 1},
		{"insert with no context", "f", ptr("a\nb\n"), ptr("a\nx\nb\n"), 0,
			"--- a/f\n+++ b/f\n@@ -1,0 +2 @@\n+x\n", 1, 0},
		{"negative context is 0", "f", ptr("a\nb\nc\n"), ptr("a\nB\nc\n"), -5,
			"--- a/f\n+++ b/f\n@@ -2 +2 @@\n-b\n+B\n", 1, 1},
		{"no newline", "f", ptr("a"), ptr("b"), 3,
			"--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n", 1, 1},
		{"path with space", "my notes.md", ptr("a\n"), ptr("b\n"), 3,
			"--- a/my notes.md\t\n+++ b/my notes.md\t\n@@ -1 +1 @@\n-a\n+b\n", 1, 1},
		{"cyrillic path quoted", "нотатки.md", nil, ptr("a\n"), 3,
			"--- /dev/null\n+++ \"b/\\320\\275\\320\\276\\321\\202\\320\\260\\321\\202\\320\\272\\320\\270.md\"\n@@ -0,0 +1 @@\n+a\n", 1, 0},
		{"quote in path", `a"b\c.md`, ptr("a\n"), ptr("b\n"), 3,
			"--- \"a/a\\\"b\\\\c.md\"\n+++ \"b/a\\\"b\\\\c.md\"\n@@ -1 +1 @@\n-a\n+b\n", 1, 1},
		{"identical", "f", ptr("a\n"), ptr("a\n"), 3, "", 0, 0},
		{"both absent", "f", nil, nil, 3, "", 0, 0},
		{"absent vs empty", "f", nil, ptr(""), 3, "", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, added, deleted := Unified(tc.path, tc.before, tc.after, tc.context)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.added, added)
			require.Equal(t, tc.del, deleted)
		})
	}
}

// TestUnifiedRandomAgainstGit compares Unified with git on edits of
// Markdown-like files drawn from a small vocabulary, so that repeated
// lines, blank lines and sliders — where diff algorithms disagree — are
// common. Every mismatch is reported with the inputs that caused it.
func TestUnifiedRandomAgainstGit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs git a few hundred times")
	}
	vocab := []string{"", "", "## Open", "## Closed", "- a", "- b", "- c", "- d", "  - sub", "\tcode", "text", "Текст", "---", "}"}
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = vocab[rng.IntN(len(vocab))]
		}
		return out
	}
	for i := 0; i < 1000; i++ {
		before := gen(rng.IntN(60))
		after := append([]string{}, before...)
		for e := rng.IntN(5) + 1; e > 0; e-- {
			pos := 0
			if len(after) > 0 {
				pos = rng.IntN(len(after) + 1)
			}
			switch op := rng.IntN(3); {
			case op == 0 || pos == len(after):
				after = with(after, pos, 0, gen(rng.IntN(3)+1)...)
			case op == 1:
				after = with(after, pos, 1)
			default:
				after = with(after, pos, 1, gen(1)...)
			}
		}
		b, a := strings.Join(before, "\n"), strings.Join(after, "\n")
		if rng.IntN(4) > 0 && b != "" {
			b += "\n"
		}
		if rng.IntN(4) > 0 && a != "" {
			a += "\n"
		}
		ctx := rng.IntN(4)
		got, _, _ := Unified("f", &b, &a, ctx)
		want := gitHunks(t, &b, &a, ctx)
		_, body, _ := cutHeader(got)
		require.Equal(t, want, body, fmt.Sprintf("case %d, context %d\nbefore %q\nafter  %q", i, ctx, b, a))
	}
}

// TestUnifiedRandomRewritesAgainstGit compares unrelated texts (where the
// discarding of unmatched and frequent lines decides the alignment) and
// big ones with thousands of edits (where git's cost cut-offs apply).
func TestUnifiedRandomRewritesAgainstGit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs git a few hundred times")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 300; i++ {
		vocab := []string{"", "  x", "\ty", "- a", "b"}
		for v := rng.IntN(12) + 2; v > 0; v-- {
			vocab = append(vocab, strings.Repeat(" ", rng.IntN(3))+string(rune('A'+v)))
		}
		gen := func(n int) string {
			ls := make([]string, n)
			for i := range ls {
				ls[i] = vocab[rng.IntN(len(vocab))]
			}
			return lines(ls...)
		}
		b, a := gen(rng.IntN(80)), gen(rng.IntN(80))
		ctx := rng.IntN(4)
		got, _, _ := Unified("f", &b, &a, ctx)
		_, body, _ := cutHeader(got)
		require.Equal(t, gitHunks(t, &b, &a, ctx), body, "case %d, context %d\nbefore %q\nafter  %q", i, ctx, b, a)
	}
	for i := 0; i < 12; i++ {
		vocab := 2 + rng.IntN(2000)
		gen := func(n int) []string {
			ls := make([]string, n)
			for i := range ls {
				ls[i] = "- " + strconv.Itoa(rng.IntN(vocab))
			}
			return ls
		}
		before := gen(rng.IntN(4000))
		after := gen(rng.IntN(4000))
		if i%2 == 1 {
			after = append([]string{}, before...)
			for e := rng.IntN(1500); e > 0; e-- {
				p := rng.IntN(len(after) + 1)
				if p < len(after) && rng.IntN(2) == 0 {
					after = with(after, p, 1)
				} else {
					after = with(after, p, 0, gen(1+rng.IntN(5))...)
				}
			}
		}
		b, a := lines(before...), lines(after...)
		got, _, _ := Unified("f", &b, &a, 3)
		_, body, _ := cutHeader(got)
		require.True(t, gitHunks(t, &b, &a, 3) == body, "large case %d differs from git (%d and %d lines)", i, len(before), len(after))
	}
}

// TestUnifiedApplies checks on random inputs, without git, that the hunks
// are a correct patch: replaying them on before yields after.
func TestUnifiedApplies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vocab := []string{"", "a", "b", "c", "d", "- x", "## S"}
	gen := func(n int) string {
		ls := make([]string, n)
		for i := range ls {
			ls[i] = vocab[rng.IntN(len(vocab))]
		}
		s := strings.Join(ls, "\n")
		if n > 0 && rng.IntN(3) > 0 {
			s += "\n"
		}
		return s
	}
	for i := 0; i < 2000; i++ {
		b, a := gen(rng.IntN(30)), gen(rng.IntN(30))
		ctx := rng.IntN(4)
		diff, added, deleted := Unified("f", &b, &a, ctx)
		if a == b {
			require.Empty(t, diff)
			continue
		}
		got, na, nd := applyHunks(t, b, diff)
		require.Equal(t, a, got, "case %d: before %q after %q\n%s", i, b, a, diff)
		require.Equal(t, na, added)
		require.Equal(t, nd, deleted)
	}
}

// applyHunks applies a diff produced by Unified to before, checking the
// context and deleted lines against it and the hunk header counts.
func applyHunks(t *testing.T, before, diff string) (string, int, int) {
	t.Helper()
	_, body, ok := cutHeader(diff)
	require.True(t, ok)
	old := splitLines(before)
	var out []string
	pos, added, deleted := 0, 0, 0
	ls := splitLines(body)
	for i := 0; i < len(ls); {
		var s1, c1, c2 int
		h := strings.TrimSuffix(ls[i], "\n")
		parse := func(r string) (int, int) {
			s, c, found := strings.Cut(r, ",")
			n, err := strconv.Atoi(s)
			require.NoError(t, err, h)
			if !found {
				return n, 1
			}
			m, err := strconv.Atoi(c)
			require.NoError(t, err, h)
			return n, m
		}
		f := strings.Fields(h)
		require.Len(t, f, 4, h)
		s1, c1 = parse(strings.TrimPrefix(f[1], "-"))
		_, c2 = parse(strings.TrimPrefix(f[2], "+"))
		if c1 > 0 {
			s1--
		}
		require.GreaterOrEqual(t, s1, pos, "hunks out of order")
		out = append(out, old[pos:s1]...)
		pos = s1
		i++
		n1, n2 := 0, 0
		for i < len(ls) && !strings.HasPrefix(ls[i], "@@ ") {
			prefix, l := ls[i][0], ls[i][1:]
			i++
			if i < len(ls) && ls[i] == noNewline {
				l = strings.TrimSuffix(l, "\n")
				i++
			}
			switch prefix {
			case ' ':
				require.Equal(t, old[pos], l)
				out = append(out, l)
				pos++
				n1++
				n2++
			case '-':
				require.Equal(t, old[pos], l)
				pos++
				n1++
				deleted++
			case '+':
				out = append(out, l)
				n2++
				added++
			}
		}
		require.Equal(t, c1, n1, h)
		require.Equal(t, c2, n2, h)
	}
	out = append(out, old[pos:]...)
	return strings.Join(out, ""), added, deleted
}
