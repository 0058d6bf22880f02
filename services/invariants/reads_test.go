package invariants

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"google.golang.org/protobuf/encoding/protojson"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// factHash is the usage key of a fact: sha256 of its trimmed text (the
// proto's FactUsage.fact_hash).
func factHash(text string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(text)))
	return hex.EncodeToString(sum[:])
}

func timestamppbNew(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

// modeMax is each mode's guaranteed maximum (§11.6, §4.1); 0 = none.
var modeMax = map[memoryv1.ReadMode]int{
	memoryv1.ReadMode_READ_MODE_BASIC: 4100,
	memoryv1.ReadMode_READ_MODE_WIDE:  13000,
	memoryv1.ReadMode_READ_MODE_DEEP:  32000,
}

// savedRead is a read at a fixed commit, repeated later: the same commit
// and request must give the same bytes whatever happened since.
type savedRead struct {
	step int
	req  *memoryv1.ReadMemoryRequest
	resp []byte
}

var marshal = proto.MarshalOptions{Deterministic: true}

func (r *runner) readBudget() int32 {
	switch x := r.rng.IntN(100); {
	case x < 25:
		return int32(1 + r.rng.IntN(200))
	case x < 55:
		return int32(200 + r.rng.IntN(4000))
	case x < 80:
		return int32(4200 + r.rng.IntN(9000))
	default:
		return int32(13000 + r.rng.IntN(19001))
	}
}

// checkReads reads the agent's memory at commit with random modes and
// budgets (1…32,000): never over the budget, counting everything returned,
// and byte-identical when repeated.
func (r *runner) checkReads(a *agent, commit string) {
	for range 1 + r.rng.IntN(2) {
		req := &memoryv1.ReadMemoryRequest{AgentId: a.id, At: commit, MaxTokens: r.readBudget()}
		switch x := r.rng.IntN(100); {
		case x < 35:
			req.Mode = memoryv1.ReadMode_READ_MODE_BASIC
		case x < 70:
			req.Mode = memoryv1.ReadMode_READ_MODE_WIDE
		case x < 90:
			req.Mode = memoryv1.ReadMode_READ_MODE_DEEP
		default:
			if len(a.commits) < 2 {
				req.Mode = memoryv1.ReadMode_READ_MODE_BASIC
				break
			}
			req.Mode = memoryv1.ReadMode_READ_MODE_TEMPORAL
			req.From = a.commits[r.rng.IntN(len(a.commits)-1)]
			req.To = commit
			req.At = ""
		}
		r.stats["reads"]++
		first, err := r.h.cac.ReadMemory(r.h.reader(), req)
		if err != nil && status.Code(err) == codes.InvalidArgument && strings.Contains(err.Error(), "too small") {
			// Refusing a budget too small for anything is not exceeding it.
			r.stats["reads-refused-small-budget"]++
			continue
		}
		if err != nil {
			r.v.add("read-memory-answers", r.step, "ReadMemory(%s) at %s: %v", describeRead(req), short(commit), err)
			continue
		}
		r.checkRead(req, first, commit)
		again, err := r.h.cac.ReadMemory(r.h.reader(), req)
		if err != nil {
			r.v.add("read-memory-answers", r.step, "repeated ReadMemory(%s): %v", describeRead(req), err)
			continue
		}
		b1, _ := marshal.Marshal(first)
		b2, _ := marshal.Marshal(again)
		if !bytes.Equal(b1, b2) {
			r.v.add("read-deterministic", r.step, "ReadMemory(%s) at %s answered differently when repeated (%d vs %d bytes)", describeRead(req), short(commit), len(b1), len(b2))
		}
		if req.At != "" {
			if len(r.savedReads) < 40 {
				r.savedReads = append(r.savedReads, savedRead{step: r.step, req: req, resp: b1})
			} else if r.rng.IntN(4) == 0 {
				r.savedReads[r.rng.IntN(len(r.savedReads))] = savedRead{step: r.step, req: req, resp: b1}
			}
		}
	}
}

func describeRead(req *memoryv1.ReadMemoryRequest) string {
	s := fmt.Sprintf("agent=%s mode=%s max_tokens=%d", req.GetAgentId(), strings.TrimPrefix(req.GetMode().String(), "READ_MODE_"), req.GetMaxTokens())
	if req.GetFrom() != "" {
		s += " from=" + short(req.GetFrom())
	}
	return s
}

func (r *runner) checkRead(req *memoryv1.ReadMemoryRequest, resp *memoryv1.ReadMemoryResponse, commit string) {
	c := r.h.counter
	budget := int(req.GetMaxTokens())
	content := 0
	names := map[string]bool{}
	for _, f := range resp.GetFiles() {
		content += c.Count(f.GetContent())
		names[f.GetFile()] = true
		if resp.GetContent()[f.GetFile()] != f.GetContent() {
			r.v.add("read-consistent", r.step, "ReadMemory(%s): content[%q] differs from files[%q]", describeRead(req), f.GetFile(), f.GetFile())
		}
	}
	for name, text := range resp.GetContent() {
		if !names[name] {
			content += c.Count(text)
			r.v.add("read-consistent", r.step, "ReadMemory(%s): content has %q, files does not", describeRead(req), name)
		}
	}
	for k, d := range resp.GetDiffs() {
		// A diff that files already carries (as "diffs/<file>") is the
		// same text: count it once.
		dup := false
		for _, f := range resp.GetFiles() {
			if f.GetFile() == "diffs/"+k && f.GetContent() == d {
				dup = true
			}
		}
		if !dup {
			content += c.Count(d)
		}
	}
	desc := describeRead(req)
	if int(resp.GetTokenCount()) > budget || content > budget {
		r.v.add("read-within-budget", r.step, "ReadMemory(%s) at %s returned %d tokens of content (tokenCount says %d), over max_tokens %d; files %v",
			desc, short(commit), content, resp.GetTokenCount(), budget, fileSizes(resp, c.Count))
	} else if max := modeMax[req.GetMode()]; max > 0 && content > max {
		r.v.add("read-within-mode-maximum", r.step, "ReadMemory(%s) returned %d tokens, over the mode's guaranteed maximum %d", desc, content, max)
	}
	// Everything the read returns counts (issue #23): the meta block as a
	// caller receives it, each file's name and content, each warning.
	returned := content + c.Count(compactJSON(resp.GetMeta()))
	for _, f := range resp.GetFiles() {
		returned += c.Count(f.GetFile())
	}
	for _, w := range resp.GetWarnings() {
		returned += c.Count(w)
	}
	if returned > budget {
		r.v.add("read-within-budget-everything", r.step, "ReadMemory(%s) returned %d tokens counting the meta block, file names and warnings, over max_tokens %d",
			desc, returned, budget)
	}
	if int(resp.GetTokenCount()) != returned {
		r.v.add("read-token-count", r.step, "ReadMemory(%s) says tokenCount %d, but what it returned counts %d", desc, resp.GetTokenCount(), returned)
	}
	// Layer 2 only on explicit request (§11.4): basic and wide load no
	// Layer 2 beyond the last 5 decisions; no mode loads runs/.
	allowed := map[memoryv1.ReadMode][]string{
		memoryv1.ReadMode_READ_MODE_BASIC: {"snapshot.md", "open_loops.md"},
		memoryv1.ReadMode_READ_MODE_WIDE:  {"snapshot.md", "open_loops.md", "facts.md", "decisions.md"},
	}[req.GetMode()]
	for _, f := range resp.GetFiles() {
		name := f.GetFile()
		if strings.HasPrefix(name, "runs/") {
			r.v.add("read-no-layer2", r.step, "ReadMemory(%s) loaded %s without an explicit request", desc, name)
		}
		if allowed != nil && !contains(allowed, name) {
			r.v.add("read-no-layer2", r.step, "ReadMemory(%s) loaded %s, not part of the mode", desc, name)
		}
		if req.GetMode() == memoryv1.ReadMode_READ_MODE_WIDE && name == "decisions.md" {
			dv := parseDecisions(f.GetContent())
			if len(dv.adrTags) > 5 || len(dv.evictedLines)+len(dv.frozenLines) > 0 {
				r.v.add("read-wide-last-5-decisions", r.step, "ReadMemory(%s) loaded decisions.md with %d entries, %d evicted-fact and %d frozen-loop lines (only the last 5 decisions, §11.4)",
					desc, len(dv.adrTags), len(dv.evictedLines), len(dv.frozenLines))
			}
		}
	}
	if resp.GetCommit() != "" && req.GetAt() != "" && resp.GetCommit() != commit {
		r.v.add("read-at-commit", r.step, "ReadMemory(%s) at %s answered from %s", desc, short(commit), short(resp.GetCommit()))
	}
}

func contains(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}

func fileSizes(resp *memoryv1.ReadMemoryResponse, count func(string) int) []string {
	var out []string
	for _, f := range resp.GetFiles() {
		out = append(out, fmt.Sprintf("%s=%d(reported %d)", f.GetFile(), count(f.GetContent()), f.GetTokenCount()))
	}
	for k, d := range resp.GetDiffs() {
		out = append(out, fmt.Sprintf("diff:%s=%d", k, count(d)))
	}
	return out
}

// recheckSavedReads repeats reads made at earlier commits.
func (r *runner) recheckSavedReads() {
	for i := range min(3, len(r.savedReads)) {
		s := r.savedReads[(r.step+i)%len(r.savedReads)]
		resp, err := r.h.cac.ReadMemory(r.h.reader(), s.req)
		if err != nil {
			r.v.add("read-memory-answers", r.step, "ReadMemory(%s) at %s (first read at step %d): %v", describeRead(s.req), short(s.req.GetAt()), s.step, err)
			continue
		}
		b, _ := marshal.Marshal(resp)
		if !bytes.Equal(b, s.resp) {
			r.v.add("read-deterministic", r.step, "ReadMemory(%s) at commit %s answers differently than at step %d (%d vs %d bytes)", describeRead(s.req), short(s.req.GetAt()), s.step, len(b), len(s.resp))
		}
	}
}

// compactJSON is a message as a REST caller receives it, without spaces.
func compactJSON(m proto.Message) string {
	b, err := protojson.Marshal(m)
	if err != nil {
		return ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}
