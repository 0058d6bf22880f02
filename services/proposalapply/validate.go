package proposalapply

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// Bounds on free-text fields, so one proposal cannot bloat the store.
const (
	maxContentBytes   = 256 << 10
	maxReasoningBytes = 16 << 10
	maxShortField     = 512
	maxEntityRefs     = 100
)

// validateProposal checks a propose request before anything is stored and
// returns its updates with content sanitized, which is what gets applied.
// Every failure is a precise InvalidArgument naming the field.
func validateProposal(req *memoryv1.ProposeRequest, counter *tokens.Counter, cfg Config) ([]*memoryv1.FileUpdate, error) {
	maxUpdates := cfg.MaxUpdates
	agent := req.GetAgentId()
	if !memlayout.ValidAgentID(agent) {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId",
			fmt.Sprintf("agentId %q must be a slug [a-z0-9][a-z0-9-]{0,63}", apierr.Clip(agent)))
	}
	if !memlayout.ValidRunID(req.GetRunId()) {
		return nil, apierr.InvalidArgument("runId",
			fmt.Sprintf("runId %q must be run_<id> with letters, digits, _ or -", apierr.Clip(req.GetRunId())))
	}
	if req.ExpectedVersion != nil && req.GetExpectedVersion() < 0 {
		return nil, apierr.InvalidArgument("expectedVersion", "expectedVersion must not be negative")
	}
	if n := len(req.GetUpdates()); n == 0 || n > maxUpdates {
		return nil, apierr.InvalidArgument("updates",
			fmt.Sprintf("a proposal carries 1 to %d updates, got %d", maxUpdates, n))
	}
	if err := apierr.CheckText("reasoning", req.GetReasoning(), maxReasoningBytes); err != nil {
		return nil, err
	}
	if err := apierr.CheckText("idempotencyKey", req.GetIdempotencyKey(), maxShortField); err != nil {
		return nil, err
	}
	if len(req.GetEntityRefs()) > maxEntityRefs {
		return nil, apierr.InvalidArgument("entityRefs", fmt.Sprintf("at most %d entityRefs", maxEntityRefs))
	}
	for i, ref := range req.GetEntityRefs() {
		if err := apierr.CheckText(fmt.Sprintf("entityRefs[%d]", i), ref, maxShortField); err != nil {
			return nil, err
		}
		if strings.TrimSpace(ref) == "" {
			return nil, apierr.InvalidArgument(fmt.Sprintf("entityRefs[%d]", i), "empty entity ref")
		}
		if strings.IndexFunc(ref, unicode.IsControl) >= 0 {
			return nil, apierr.InvalidArgument(fmt.Sprintf("entityRefs[%d]", i),
				fmt.Sprintf("entityRefs[%d] must be one line, without control characters", i))
		}
	}
	if d := req.GetRunDuration(); d != nil && (d.CheckValid() != nil || d.AsDuration() < 0) {
		return nil, apierr.InvalidArgument("runDuration", "runDuration must be a valid, non-negative duration")
	}
	if p := req.GetPriority(); p != memoryv1.Priority_PRIORITY_UNSPECIFIED && p != memoryv1.Priority_PRIORITY_NORMAL && p != memoryv1.Priority_PRIORITY_HIGH {
		return nil, apierr.InvalidArgument("priority", "priority must be normal or high")
	}

	out := make([]*memoryv1.FileUpdate, 0, len(req.GetUpdates()))
	for i, u := range req.GetUpdates() {
		clean, err := validateUpdate(agent, fmt.Sprintf("updates[%d]", i), u, counter, cfg)
		if err != nil {
			return nil, err
		}
		out = append(out, clean)
	}
	return out, nil
}

func validateUpdate(agent, field string, u *memoryv1.FileUpdate, counter *tokens.Counter, cfg Config) (*memoryv1.FileUpdate, error) {
	f, err := memlayout.Resolve(agent, u.GetFile())
	if err != nil {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_PATH, field+".file",
			fmt.Sprintf("%s.file %q is not an agent memory file (snapshot.md, facts.md, open_loops.md, decisions.md, runs/run_<id>.md, logic/current.pseudo.md, logic/current.drakon.json, policy.json)", field, apierr.Clip(u.GetFile())))
	}
	if err := memlayout.CheckOperation(f, u.GetOperation()); err != nil {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_OPERATION, field+".operation", fmt.Sprintf("%s: %v", field, err))
	}
	clean := proto.Clone(u).(*memoryv1.FileUpdate)
	for name, v := range map[string]string{"section": u.GetSection(), "loopId": u.GetLoopId(), "resolution": u.GetResolution()} {
		if err := apierr.CheckText(field+"."+name, v, maxShortField); err != nil {
			return nil, err
		}
		if strings.ContainsAny(v, "\n\r") {
			return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field+"."+name, field+"."+name+" must be one line")
		}
	}
	maxContent := maxContentBytes
	if f.Kind == memlayout.KindArtifact {
		maxContent = cfg.MaxArtifactBytes
	}
	if err := apierr.CheckText(field+".content", u.GetContent(), maxContent); err != nil {
		return nil, err
	}
	op := u.GetOperation()
	needsContent := op != memoryv1.Operation_OPERATION_CLOSE && op != memoryv1.Operation_OPERATION_ADD_DECISION
	if needsContent && strings.TrimSpace(u.GetContent()) == "" {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field+".content", field+".content must not be empty")
	}

	switch f.Kind {
	case memlayout.KindArtifact:
		// An artifact is kept byte for byte (a log, a report, JSON); it
		// still may not carry active content.
		if _, err := mdops.Sanitize(u.GetContent()); errors.Is(err, mdops.ErrScript) {
			return nil, contentError(field, err)
		}
	case memlayout.KindLogicDrakon, memlayout.KindPolicy:
		if !json.Valid([]byte(u.GetContent())) {
			return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field+".content", field+": "+f.Rel+" must be valid JSON")
		}
		if f.Kind == memlayout.KindPolicy {
			if _, err := memlayout.ParsePolicy([]byte(u.GetContent())); err != nil {
				return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field+".content", err.Error())
			}
		}
		// JSON is data, not Markdown; it still may not smuggle active content.
		if _, err := mdops.Sanitize(u.GetContent()); errors.Is(err, mdops.ErrScript) {
			return nil, contentError(field, err)
		}
	default:
		if u.GetContent() != "" {
			s, err := mdops.Sanitize(u.GetContent())
			if err != nil {
				return nil, contentError(field, err)
			}
			if err := mdops.ValidateHeadings(s); err != nil {
				return nil, contentError(field, err)
			}
			if f.Kind == memlayout.KindFacts && op == memoryv1.Operation_OPERATION_APPEND {
				if err := checkTTLMarkers(field, s); err != nil { // ttl.go
					return nil, err
				}
			}
			clean.Content = s
		}
	}
	if op == memoryv1.Operation_OPERATION_CLOSE && strings.TrimSpace(u.GetLoopId()) == "" {
		return nil, apierr.InvalidArgument(field+".loopId", field+": close needs a loopId")
	}
	if op == memoryv1.Operation_OPERATION_CLOSE && !mdops.ValidLoopID(u.GetLoopId()) {
		return nil, apierr.InvalidArgument(field+".loopId",
			fmt.Sprintf("%s: loopId %q is not a loop id (loop_NNN)", field, apierr.Clip(u.GetLoopId())))
	}
	if op == memoryv1.Operation_OPERATION_ADD_DECISION {
		d := u.GetDecision()
		if d == nil || strings.TrimSpace(d.GetTitle()) == "" {
			return nil, apierr.InvalidArgument(field+".decision.title", field+": add_decision needs decision.title")
		}
		cd := proto.Clone(d).(*memoryv1.Decision)
		for _, f := range []struct {
			name string
			v    *string
		}{{"title", &cd.Title}, {"status", &cd.Status}, {"context", &cd.Context}, {"decision", &cd.Decision},
			{"rationale", &cd.Rationale}, {"consequences", &cd.Consequences}, {"runId", &cd.RunId}} {
			name := field + ".decision." + f.name
			if err := apierr.CheckText(name, *f.v, maxContentBytes); err != nil {
				return nil, err
			}
			s, err := mdops.Sanitize(*f.v)
			if err != nil {
				return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, name, fmt.Sprintf("%s: %v", name, err))
			}
			*f.v = s
		}
		if strings.ContainsAny(cd.GetTitle(), "\n\r") {
			return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field+".decision.title", "decision.title must be one line")
		}
		clean.Decision = cd
	}

	if f.Kind == memlayout.KindSnapshot {
		// Readers treat an empty or headless snapshot as corrupted memory.
		if err := mdops.CheckSnapshot(clean.GetContent()); err != nil {
			return nil, contentError(field, err)
		}
	}
	// Hard limits that no eviction can fix are checked now (spec §11.3).
	limit := 0
	switch f.Kind {
	case memlayout.KindSnapshot:
		limit = memlayout.SnapshotLimit
	case memlayout.KindRun:
		limit = memlayout.RunLimit
	}
	if limit > 0 {
		if n := counter.Count(clean.GetContent()); n > limit {
			return nil, apierr.New(codes.InvalidArgument, memoryv1.ErrorReason_ERROR_REASON_TOKEN_LIMIT_EXCEEDED,
				fmt.Sprintf("%s: %s is %d tokens, over its hard limit of %d (%s)", field, f.Rel, n, limit, counter.Encoding()),
				map[string]string{"file": f.Rel, "tokens": strconv.Itoa(n), "limit": strconv.Itoa(limit), "encoding": counter.Encoding()})
		}
	}
	return clean, nil
}

func contentError(field string, err error) error {
	return apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_CONTENT, field+".content", fmt.Sprintf("%s: %v", field, err))
}
