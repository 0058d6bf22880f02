package invariants

import (
	"fmt"
	"math/rand/v2"
	"strings"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// The generator: random proposals sized to press on the hard limits
// (facts.md near 8,000 tokens, open_loops.md near 2,000).

var words = strings.Fields(`storage cluster replica zone backup bucket versioning latency dashboard
migration schema index shard quorum lease token budget gateway proposal review commit branch mirror
snapshot archive retention policy alert metric trace span exporter collector pipeline runtime agent
curator garden bloom orchestrator scheduler queue worker deadline timeout retry backoff checksum
compression encryption rotation credential tenant region eastern western nightly weekly quarterly
throughput capacity headroom failover primary secondary follower leader election consensus journal
ledger invoice customer contract vendor supplier release rollout canary feature flag experiment`)

var ukWords = strings.Fields(`сховище кластер репліка резервна копія версія затримка міграція схема
індекс пам'ять агент рішення петля факт знання проєкт домен контекст запуск перевірка`)

var factSections = []string{"Domain", "Technical knowledge", "Project context", "Технічні знання", "Operations", "People"}

type gen struct {
	rng     *rand.Rand
	counter *tokens.Counter
	next    int // tag counter
}

func (g *gen) tag(prefix string) string {
	g.next++
	return fmt.Sprintf("%s%06d", prefix, g.next)
}

func (g *gen) sentence(n int) string {
	ws := make([]string, n)
	for i := range ws {
		if g.rng.IntN(12) == 0 {
			ws[i] = ukWords[g.rng.IntN(len(ukWords))]
		} else {
			ws[i] = words[g.rng.IntN(len(words))]
		}
	}
	return strings.Join(ws, " ")
}

// factText is one fact line's text (no "- "), single-spaced, one line.
func (g *gen) factText(id string) string {
	return id + " " + g.sentence(6+g.rng.IntN(40)) + "."
}

// paragraph returns lines of text of about target tokens.
func (g *gen) paragraph(target int) string {
	var b strings.Builder
	total := 0
	for total < target {
		line := g.sentence(10+g.rng.IntN(20)) + ".\n"
		total += g.counter.Count(line)
		b.WriteString(line)
	}
	return b.String()
}

// update kinds, for descriptions.
func describe(req *memoryv1.ProposeRequest, c *tokens.Counter) string {
	var parts []string
	for _, u := range req.GetUpdates() {
		op := strings.TrimPrefix(u.GetOperation().String(), "OPERATION_")
		switch u.GetOperation() {
		case memoryv1.Operation_OPERATION_APPEND:
			lines := strings.Split(strings.TrimSpace(u.GetContent()), "\n")
			first := factTagRe.FindString(lines[0])
			last := factTagRe.FindString(lines[len(lines)-1])
			parts = append(parts, fmt.Sprintf("%s %s §%q %d facts %s..%s (%d tokens)", op, u.GetFile(), u.GetSection(), len(lines), first, last, c.Count(u.GetContent())))
		case memoryv1.Operation_OPERATION_REMOVE:
			parts = append(parts, fmt.Sprintf("%s %s %s", op, u.GetFile(), factTagRe.FindString(u.GetContent())))
		case memoryv1.Operation_OPERATION_OPEN:
			parts = append(parts, fmt.Sprintf("%s %s %s %s", op, u.GetFile(), loopTagRe.FindString(u.GetContent()), strings.TrimPrefix(u.GetLoopPriority().String(), "LOOP_PRIORITY_")))
		case memoryv1.Operation_OPERATION_CLOSE:
			parts = append(parts, fmt.Sprintf("%s %s %s", op, u.GetFile(), u.GetLoopId()))
		case memoryv1.Operation_OPERATION_ADD_DECISION:
			parts = append(parts, fmt.Sprintf("%s %s %q", op, u.GetFile(), u.GetDecision().GetTitle()))
		default:
			parts = append(parts, fmt.Sprintf("%s %s (%d tokens)", op, u.GetFile(), c.Count(u.GetContent())))
		}
	}
	ev := ""
	if req.ExpectedVersion != nil {
		ev = fmt.Sprintf(" expected_version=%d", req.GetExpectedVersion())
	}
	return fmt.Sprintf("{agent=%s run=%s%s updates=[%s]}", req.GetAgentId(), req.GetRunId(), ev, strings.Join(parts, "; "))
}
