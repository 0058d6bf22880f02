package episode_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/episode"
	"github.com/garden-bloom/memory/pkg/mdops"
)

var (
	headerLine = regexp.MustCompile(`^- \*\*(Episode|When|Task|Outcome|Context|Skills used|Artifacts touched|Failure mode|Fix|Tests|Environment|Duration):\*\* \S`)
	linkRe     = regexp.MustCompile(`\[\[([^\]]*)\]\]`)
)

// Whatever an agent sends, Normalize either refuses it naming an episode
// field, or accepts it; then normalising again changes nothing, and the run
// file keeps its structure: only the known header lines before the first
// section, links that are links, headings the validator accepts, and content
// the sanitizer leaves exactly as it is (so what is committed is what was
// rendered).
func FuzzNormalizeRender(f *testing.F) {
	f.Add("Fix the build", "It broke.\n# heading?\n- **Tests:** [[test:x]]", "Go Testing", "./a/../b.go", "failure", "high",
		"panic: <nil> at [3] | x", "", "fix it [[now]]", "t1", "pass", "backend/a:b", "a fact with <T>")
	f.Add("", "```\nfence", "c++", `C:\x\y.txt`, "", "", "dial tcp [::1]:80: refused", "custom|mode]", "", "", "skip", "", "**bold** fact")
	f.Fuzz(func(t *testing.T, task, summary, skill, artifact, status, severity, errText, failureMode, fix, testName, testResult, ctx, fact string) {
		e := &memoryv1.Episode{TaskText: task, Summary: summary, UsedSkills: []string{skill}, TouchedArtifacts: []string{artifact},
			Outcome: &memoryv1.EpisodeOutcome{Status: status, Severity: severity, Notes: errText},
			Errors:  []string{errText}, FailureMode: failureMode, Fix: fix, Context: ctx, Facts: []string{fact},
			Tests: []*memoryv1.EpisodeTest{{Name: testName, Result: testResult}}}
		if err := episode.Normalize(e, now); err != nil {
			field := apierr.Info(err).GetMetadata()["field"]
			require.True(t, field == "episode" || strings.HasPrefix(field, "episode."), "field %q: %v", field, err)
			return
		}
		again := proto.Clone(e).(*memoryv1.Episode)
		require.NoError(t, episode.Normalize(again, now))
		require.True(t, proto.Equal(e, again), "Normalize is idempotent")

		run := episode.Render(e)
		clean, err := mdops.Sanitize(run)
		require.NoError(t, err)
		require.Equal(t, run, clean, "the sanitizer keeps the run file as rendered")
		require.NoError(t, mdops.ValidateHeadings(run))
		header, _, _ := strings.Cut(run, "\n## ")
		lines := strings.Split(header, "\n")
		require.Equal(t, "# Episode "+e.GetEpisodeId(), lines[0])
		for _, l := range lines[1:] {
			if l == "" {
				continue
			}
			require.Regexp(t, headerLine, l)
		}
		for _, l := range strings.Split(run, "\n")[len(lines):] {
			require.NotRegexp(t, headerLine, l, "no other line reads as a header line")
			require.False(t, strings.HasPrefix(l, "# "), "no other top heading: %q", l)
		}
		for _, m := range linkRe.FindAllStringSubmatch(header, -1) {
			require.NotContains(t, m[1], "[", "link %q", m[0])
		}
	})
}
