package proposalapply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/authz"
	"github.com/garden-bloom/memory/pkg/factttl"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// Fact TTL (memory-bridge §4, docs/ttl.md). A fact's TTL is a marker at the
// end of its line in facts.md (pkg/factttl), so git shows it. SetFactTTL
// rewrites the line through an ordinary proposal: the old line removed and
// the new one appended to the same section, in one proposal, so review
// policy, idempotency and the one-commit apply are those of every write.
// The scheduler (ttl_scheduler.go) applies what the markers say when they
// run out, the same way.

// Bounds of a TTL: under a minute the scheduler (--ttl-interval, 1m by
// default) could not keep it; past ten years it is a typo for "forever",
// which is no TTL at all.
const (
	minFactTTL = time.Minute
	maxFactTTL = 10 * 365 * 24 * time.Hour
)

// setTTLRunID is the run of SetFactTTL proposals that name none.
const setTTLRunID = "set-fact-ttl"

// checkTTLMarkers refuses appended facts whose trailing TTL marker does not
// parse (a bad time, an unknown action) or that carry two, naming the line.
// A well-formed marker is kept as written, expired or not: its tokens count
// toward facts.md's limit like the rest of the line.
func checkTTLMarkers(field, content string) error {
	for n, l := range strings.Split(content, "\n") {
		if err := factttl.Check(bulletless(l)); err != nil {
			return apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field+".content",
				fmt.Sprintf("%s.content: line %d: %v (format: _(expires 2026-12-04T10:00:00Z, then mark_stale|archive|delete)_ or _(stale since 2026-12-04T10:00:00Z)_)", field, n+1, err))
		}
	}
	return nil
}

// bulletless is a line without its list marker ("- ", "* ", "+ "), trimmed.
func bulletless(l string) string {
	l = strings.TrimSpace(l)
	if len(l) >= 2 && (l[0] == '-' || l[0] == '*' || l[0] == '+') && (l[1] == ' ' || l[1] == '\t') {
		return strings.TrimSpace(l[2:])
	}
	return l
}

// ttlRequest is a validated SetFactTTL request.
type ttlRequest struct {
	agent, fact, runID string
	// ttl 0 removes the fact's TTL.
	ttl    time.Duration
	action factttl.Action
}

// SetFactTTL gives a fact of facts.md a TTL and an expiry action, or removes
// its TTL, through a proposal that rewrites its line.
func (h *handler) SetFactTTL(ctx context.Context, req *memoryv1.SetFactTTLRequest) (*memoryv1.SetFactTTLResponse, error) {
	if !memlayout.ValidAgentID(req.GetAgentId()) {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug [a-z0-9][a-z0-9-]{0,63}")
	}
	claims, err := authz.RequireAgent(ctx, req.GetAgentId(), proposeRoles...)
	if err != nil {
		return nil, err
	}
	in, err := checkSetFactTTL(req)
	if err != nil {
		return nil, err
	}
	p, expires, err := h.svc.setFactTTL(ctx, in, claims.Subject)
	if err != nil {
		return nil, err
	}
	resp := &memoryv1.SetFactTTLResponse{Proposal: proposeResponse(p)}
	if !expires.IsZero() {
		resp.ExpiresAt = timestamppb.New(expires)
	}
	return resp, nil
}

// checkSetFactTTL validates everything a SetFactTTL request says by itself.
func checkSetFactTTL(req *memoryv1.SetFactTTLRequest) (ttlRequest, error) {
	in := ttlRequest{agent: req.GetAgentId(), fact: strings.TrimSpace(req.GetFact()), runID: req.GetRunId()}
	if err := apierr.CheckText("fact", req.GetFact(), maxReasoningBytes); err != nil {
		return in, err
	}
	if in.fact == "" {
		return in, apierr.InvalidArgument("fact", `fact is required: the fact's line as facts.md holds it, or its text without "- "`)
	}
	if strings.ContainsAny(in.fact, "\r\n") {
		return in, apierr.InvalidArgument("fact", "fact must be one line: a TTL belongs to one fact of facts.md")
	}
	d := req.GetTtl()
	switch {
	case d == nil:
		return in, apierr.InvalidArgument("ttl", `ttl is required: a duration such as "720h" (JSON "2592000s"); 0 removes the fact's TTL`)
	case d.CheckValid() != nil:
		return in, apierr.InvalidArgument("ttl", "ttl is not a valid duration")
	}
	in.ttl = d.AsDuration()
	switch {
	case in.ttl < 0:
		return in, apierr.InvalidArgument("ttl", "ttl must not be negative (0 removes the fact's TTL)")
	case in.ttl > 0 && in.ttl < minFactTTL:
		return in, apierr.InvalidArgument("ttl", fmt.Sprintf("ttl %s is shorter than %s (0 removes the fact's TTL)", in.ttl, minFactTTL))
	case in.ttl > maxFactTTL:
		return in, apierr.InvalidArgument("ttl", fmt.Sprintf("ttl %s is longer than %s (10 years); a fact that never expires has no TTL", in.ttl, maxFactTTL))
	}
	var err error
	if in.action, err = factttl.ActionFromProto(req.GetOnExpire()); err != nil {
		return in, apierr.InvalidArgument("onExpire", fmt.Sprintf("onExpire %d is not mark_stale, archive or delete", req.GetOnExpire()))
	}
	if in.runID == "" {
		in.runID = setTTLRunID
	}
	if !memlayout.ValidRunID(in.runID) {
		return in, apierr.InvalidArgument("runId", fmt.Sprintf("runId %q must be run_<id> with letters, digits, _ or -", apierr.Clip(in.runID)))
	}
	return in, nil
}

// setFactTTL finds the fact in facts.md at head and proposes its rewrite:
// with the new marker, or without one when in.ttl is 0. It returns the
// proposal and when the fact expires (zero when the TTL is removed).
func (s *Service) setFactTTL(ctx context.Context, in ttlRequest, by string) (*memoryv1.Proposal, time.Time, error) {
	head, meta, policy, err := s.headState(ctx, in.agent)
	if err != nil {
		return nil, time.Time{}, s.internal(err, "reading the agent's memory")
	}
	md, ok, err := s.reader(ctx, head, in.agent)(memlayout.FactsFile)
	if err != nil {
		return nil, time.Time{}, s.internal(err, "reading the agent's memory")
	}
	if !ok && meta.Version == 0 {
		return nil, time.Time{}, apierr.AgentNotFound(in.agent, head.String()[:12])
	}
	f, err := findFact(md, in.fact, in.agent)
	if err != nil {
		return nil, time.Time{}, err
	}
	if f.Section == "" {
		return nil, time.Time{}, apierr.InvalidArgument("fact",
			fmt.Sprintf("the fact on line %d of facts.md is above its first \"## \" section: a TTL rewrite keeps a fact in its section, so move it into one first", f.Line))
	}
	if len(f.More) > 0 {
		return nil, time.Time{}, apierr.InvalidArgument("fact",
			fmt.Sprintf("the fact on line %d of facts.md has %d sub-bullet or wrapped line(s): a TTL marker belongs to a one-line fact", f.Line, len(f.More)))
	}
	body := factttl.Strip(f.Text)
	next, expires := body, time.Time{}
	reason := fmt.Sprintf("Remove the TTL of the fact %q", clip(body))
	if in.ttl == 0 {
		if _, has := factttl.Of(f.Text); !has {
			return nil, time.Time{}, apierr.InvalidArgument("ttl", fmt.Sprintf("the fact on line %d of facts.md has no TTL to remove", f.Line))
		}
	} else {
		expires = ceilSecond(s.now().Add(in.ttl))
		next = factttl.With(body, factttl.ExpiresAt(expires, in.action))
		reason = fmt.Sprintf("Set the TTL of the fact %q: expires %s, then %s", clip(body), expires.Format(factttl.TimeLayout), in.action)
	}
	sum := sha256.Sum256([]byte(f.Text + "\x00" + next))
	req := &memoryv1.ProposeRequest{AgentId: in.agent, RunId: in.runID, Reasoning: reason,
		IdempotencyKey: "set-fact-ttl:" + hex.EncodeToString(sum[:16]),
		Updates: []*memoryv1.FileUpdate{
			{File: memlayout.FactsFile, Operation: memoryv1.Operation_OPERATION_REMOVE, Content: "- " + f.Text},
			{File: memlayout.FactsFile, Operation: memoryv1.Operation_OPERATION_APPEND, Section: f.Section, Content: "- " + next},
		}}
	// The checks of every proposal; the line is the agent's own fact.
	updates, err := validateProposal(req, s.counter, s.cfg)
	if err != nil {
		return nil, time.Time{}, err
	}
	p := s.newProposal(in.agent, in.runID, by)
	p.Updates, p.Reasoning, p.IdempotencyKey = updates, req.GetReasoning(), req.GetIdempotencyKey()
	plan, err := s.dryRun(ctx, p, head)
	if err != nil {
		return nil, time.Time{}, err
	}
	p.Warnings = plan.Warnings
	// The semantic guard is not asked: it judges what a proposal brings
	// (repeated facts, unknown entities, removals others refer to), and a
	// TTL rewrite brings nothing — the fact's text stays as it was. The
	// policy's own flags still apply.
	p.Flags = reviewFlags(updates)
	rec, err := s.submit(ctx, p, head, meta, policy)
	if err != nil {
		return nil, time.Time{}, s.internal(err, "storing the proposal")
	}
	return rec.Proposal, expires, nil
}

// findFact finds the fact want names in facts.md: its exact text (the
// line without "- "), else its text whatever TTL marker either side
// carries. Several matches are refused, listed, rather than guessed.
func findFact(md, want, agent string) (mdops.Fact, error) {
	want = bulletless(want)
	var exact, loose []mdops.Fact
	key := factttl.Strip(want)
	for _, f := range mdops.ParseFacts(md) {
		switch {
		case f.Text == want:
			exact = append(exact, f)
		case factttl.Strip(f.Text) == key:
			loose = append(loose, f)
		}
	}
	matches := exact
	if len(matches) == 0 {
		matches = loose
	}
	switch len(matches) {
	case 0:
		return mdops.Fact{}, apierr.InvalidArgument("fact",
			fmt.Sprintf("fact %q is not in facts.md of %s: send its line as facts.md holds it, or its text without \"- \"", apierr.Clip(want), agent))
	case 1:
		return matches[0], nil
	}
	var lines []string
	for _, f := range matches {
		lines = append(lines, fmt.Sprintf("line %d: - %s", f.Line, clip(f.Text)))
	}
	return mdops.Fact{}, apierr.InvalidArgument("fact",
		fmt.Sprintf("fact %q matches %d facts of facts.md; send the exact line of one: %s", apierr.Clip(want), len(matches), strings.Join(lines, "; ")))
}

// ceilSecond rounds t up to the second markers are written in, so a fact
// never expires before the TTL asked for.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second).UTC()
	}
	return t.UTC()
}

// clip shortens a fact for a message or a commit's reason.
func clip(s string) string {
	if len(s) <= 120 {
		return s
	}
	cut := 120
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
