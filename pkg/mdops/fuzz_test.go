package mdops

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// FuzzSanitize checks Sanitize's contract on arbitrary input: no panic, and
// accepted output is clean, free of active content and a fixed point.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"<b>bold</b>", "a < b", "`<b>`", "<ScRiPt>", "<img src=x onerror=alert(1)>",
		"[x](JaVaScRiPt:alert(1))", "<<b>b>", "<!-- x", "```\n<b>\n```", "<a href='&#106;avascript:x'>",
		"<im<b>g src=x onerror=alert(1)>", "\\<b>", "<https://x.y>", "x\r\ny",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Sanitize(in)
		if err != nil {
			return
		}
		require.True(t, utf8.ValidString(out))
		require.NotContains(t, out, "\r")
		require.NotContains(t, out, "\x00")
		require.NoError(t, checkActive(out))
		again, err := Sanitize(out)
		require.NoError(t, err)
		require.Equal(t, out, again)
	})
}

// FuzzAppendFacts checks that appending agent content never reshapes
// facts.md: same headings (plus at most the new section), all old facts
// kept in order, headings still valid.
func FuzzAppendFacts(f *testing.F) {
	for _, s := range []string{"fact", "- a\n* b", "## x", "```\n- y", "a\n===", "<b>x</b>\n`y`"} {
		f.Add("Domain", s)
	}
	f.Fuzz(func(t *testing.T, section, content string) {
		base := readTestdata(t, "facts.md")
		out, added, err := AppendFacts(base, "a1", section, content)
		if err != nil {
			return
		}
		requireFile(t, out)
		require.NoError(t, ValidateHeadings(out))
		headings := func(md string) []string {
			d := newDoc(md)
			var hs []string
			for i := range d.lines {
				if _, text, ok := d.heading(i); ok {
					hs = append(hs, text)
				}
			}
			return hs
		}
		before, after := headings(base), headings(out)
		require.GreaterOrEqual(t, len(after), len(before))
		require.LessOrEqual(t, len(after), len(before)+1)
		require.Equal(t, before, after[:len(before)])
		oldFacts, newFacts := ParseFacts(base), ParseFacts(out)
		require.Equal(t, len(oldFacts)+added, len(newFacts))
		j := 0
		for _, nf := range newFacts {
			if j < len(oldFacts) && nf.Text == oldFacts[j].Text {
				j++
			}
		}
		require.Equal(t, len(oldFacts), j, "old facts must survive in order")
		require.False(t, strings.Contains(out, "\n\n\n\n"))
		again, added2, err := AppendFacts(out, "a1", section, content)
		require.NoError(t, err)
		require.Zero(t, added2)
		require.Equal(t, out, again, "idempotent")
	})
}

// FuzzLoopRoundTrip checks that any accepted loop text and resolution come
// back unchanged from ParseLoops, before and after closing.
func FuzzLoopRoundTrip(f *testing.F) {
	for _, s := range []string{"Confirm MinIO", "a — b | c", "loop_001: x", "resolution: x | y", "— closed 2026", "Петля"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, text, resolution string) {
		base := readTestdata(t, "open_loops.md")
		out, id, err := OpenLoop(base, "a1", "", text, "low", day0)
		if err != nil {
			return
		}
		clean, _ := Sanitize(text)
		want := collapseSpace(clean)
		find := func(md string) Loop {
			for _, l := range ParseLoops(md) {
				if l.ID == id {
					return l
				}
			}
			t.Fatalf("loop %s not found in\n%s", id, md)
			return Loop{}
		}
		l := find(out)
		require.Equal(t, want, l.Text)
		require.Equal(t, PriorityLow, l.Priority)
		require.Equal(t, date(2026, 2, 17), l.Opened)
		require.Len(t, ParseLoops(out), len(ParseLoops(base))+1)

		closed, err := CloseLoop(out, id, resolution, "run_f", days(1))
		if err != nil {
			return
		}
		l = find(closed)
		require.True(t, l.Closed)
		require.Equal(t, want, l.Text)
		res, _ := Sanitize(resolution)
		require.Equal(t, collapseSpace(res), l.Resolution)
		require.Equal(t, "run_f", l.RunID)
		require.Equal(t, date(2026, 2, 18), l.ClosedAt)
		require.Equal(t, date(2026, 2, 17), l.Opened)
	})
}

// FuzzDecisionRoundTrip checks that any accepted decision parses back to
// the same fields and never disturbs the entries before it.
func FuzzDecisionRoundTrip(f *testing.F) {
	f.Add("Title", "ctx\nline 2", "dec", "run_1")
	f.Add("Рішення — з тире", "```\ncode\n```", "**Note:** x", "")
	f.Fuzz(func(t *testing.T, title, context, decision, run string) {
		base := readTestdata(t, "decisions.md")
		d := Decision{Title: title, Context: context, Decision: decision, RunID: run}
		out, err := AddDecision(base, "a1", d, day0)
		if err != nil {
			return
		}
		requireFile(t, out)
		got := ParseDecisions(out)
		require.Len(t, got, len(ParseDecisions(base))+1)
		require.Equal(t, ParseDecisions(base), got[:len(got)-1])
		last := got[len(got)-1]
		clean, _ := Sanitize(title)
		require.Equal(t, stripClosingHashes(collapseSpace(clean)), last.Title)
		again, err := AddDecision(out, "a1", last, last.Date)
		require.NoError(t, err)
		require.Equal(t, out, again, "parsed entry must equal the written one")
	})
}
