package mdops

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fieldLineRe is how a "**Label:** value" line was defined before
// parseFieldLine replaced the regexp on the hot path (issue #25: parsing a
// long decisions.md took a tenth of the write plane's CPU in the soak). It
// stays here as the reference the hand-written parser must agree with.
var fieldLineRe = regexp.MustCompile(`^\*\*([^*]+?):\*\*(?:[ \t]+(.*))?$`)

func checkFieldLine(t *testing.T, l string) {
	t.Helper()
	label, value, ok := parseFieldLine(l)
	m := fieldLineRe.FindStringSubmatch(l)
	require.Equal(t, m != nil, ok, "line %q", l)
	if m != nil {
		require.Equal(t, m[1], label, "label of %q", l)
		require.Equal(t, m[2], value, "value of %q", l)
	}
}

func TestParseFieldLineAgreesWithTheRegexp(t *testing.T) {
	for _, l := range []string{
		"**Status:** accepted", "**Status:**", "**Status:**\taccepted", "**Status:**  two spaces ",
		"**Status:**accepted", "**Status:** ", "**Status:** \t ", "**a:b:** x", "**a*b:** x", "**:** x",
		"** :** x", "**Статус:** Прийнято", "**Status:*** x", "**Status** x", "*Status:** x", "**Status:* x",
		"**Status:** x\r", "**Status:**\r", " **Status:** x", "**Status:** **Run:** y", "", "**", "****", "**:**",
		"**Status:** \xff", "**\xff:** x", "**Status: ** x", "**Status::** x", "**Sta\ttus:** x",
	} {
		checkFieldLine(t, l)
	}
}

func FuzzParseFieldLine(f *testing.F) {
	for _, s := range []string{"**Status:** accepted", "**a:b:** x", "**Status:**\t", "**:**"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, l string) {
		if strings.Contains(l, "\n") {
			return // lines never hold one
		}
		checkFieldLine(t, l)
	})
}

func TestCountDecisionsIsTheNumberParsed(t *testing.T) {
	for _, md := range []string{
		"", "# Decisions: a\n", readTestdata(t, "decisions.md"),
		"## 2026-01-02 — A\n**Status:** x\n```\n## 2026-01-03 — in a fence\n```\n## 2026-01-04 – B\n## Evicted facts\n- f\n## 2026-13-40 — bad date\n",
		"## 2026-01-02 — A\n## 2026-01-02 — A\n### 2026-01-02 — level 3\n#  2026-01-05 — level 1\n",
	} {
		require.Equal(t, len(ParseDecisions(md)), CountDecisions(md), "%q", md)
	}
}
