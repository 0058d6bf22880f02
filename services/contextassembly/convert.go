package contextassembly

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memread"
)

// Conversions between the API's messages and the service's own types.

func mode(m memoryv1.ReadMode) (memread.Mode, error) {
	switch m {
	case memoryv1.ReadMode_READ_MODE_UNSPECIFIED, memoryv1.ReadMode_READ_MODE_BASIC:
		return memread.Basic, nil
	case memoryv1.ReadMode_READ_MODE_WIDE:
		return memread.Wide, nil
	case memoryv1.ReadMode_READ_MODE_DEEP:
		return memread.Deep, nil
	case memoryv1.ReadMode_READ_MODE_TEMPORAL:
		return memread.Temporal, nil
	}
	return "", fmt.Errorf("unknown mode")
}

// readResponse answers ReadMemory with read, made in readMode.
func readResponse(agent string, readMode memoryv1.ReadMode, read *memoryRead) *memoryv1.ReadMemoryResponse {
	res, meta := read.res, read.meta
	diffs := map[string]string{}
	resp := &memoryv1.ReadMemoryResponse{
		AgentId: agent, Version: meta.Version, Commit: read.commit.Hash.String(),
		LoadedAt: timestamppb.New(read.commit.Committer.When), Mode: readMode, TokenCount: int32(res.Tokens),
		Content: map[string]string{}, Meta: metaMessage(agent, meta), Truncated: res.Truncated, Warnings: slices.Clip(res.Warnings),
	}
	if resp.Mode == memoryv1.ReadMode_READ_MODE_UNSPECIFIED {
		resp.Mode = memoryv1.ReadMode_READ_MODE_BASIC
	}
	for _, f := range res.Files {
		if rel, ok := strings.CutPrefix(f.Rel, "diffs/"); ok {
			diffs[rel] = f.Content
		}
		resp.Content[f.Rel] = f.Content
		resp.Files = append(resp.Files, &memoryv1.FileContent{File: f.Rel, Content: f.Content, TokenCount: int32(f.Tokens), Layer: int32(f.Layer), Truncated: f.Truncated})
	}
	if len(diffs) > 0 {
		resp.Diffs = diffs
	}
	return resp
}

func metaMessage(agent string, m memlayout.Meta) *memoryv1.MemoryMeta {
	out := &memoryv1.MemoryMeta{
		AgentId: agent, Version: m.Version, LastRunId: m.LastRunID,
		SnapshotTokenCount: int32(m.SnapshotTokenCount), FactsTokenCount: int32(m.FactsTokenCount),
		OpenLoopsTokenCount: int32(m.OpenLoopsTokenCount), OpenLoopsCount: int32(m.OpenLoopsCount),
		DecisionsCount: int32(m.DecisionsCount), SchemaVersion: m.SchemaVersion, TokenEncoding: m.TokenEncoding,
		Checksum: m.Layer1SHA256,
	}
	if !m.LastUpdate.IsZero() {
		out.LastUpdate = timestamppb.New(m.LastUpdate)
	}
	return out
}

func decisionMessage(d mdops.Decision) *memoryv1.Decision {
	return &memoryv1.Decision{Id: d.ID, Title: d.Title, Status: d.Status, Context: d.Context,
		Decision: d.Decision, Rationale: d.Rationale, Consequences: d.Consequences, RunId: d.RunID, Date: timestamppb.New(d.Date)}
}

// changeKind is memdiff's change ("added", "removed", "changed") as the API's.
func changeKind(s string) memoryv1.ChangeKind {
	switch s {
	case "added":
		return memoryv1.ChangeKind_CHANGE_KIND_ADDED
	case "removed":
		return memoryv1.ChangeKind_CHANGE_KIND_REMOVED
	}
	return memoryv1.ChangeKind_CHANGE_KIND_CHANGED
}

func statusResponse(agent string, st *agentStatus) *memoryv1.GetAgentStatusResponse {
	resp := &memoryv1.GetAgentStatusResponse{AgentId: agent, Commit: st.commit,
		Meta: metaMessage(agent, st.meta), Layer1Limit: memlayout.Layer1Limit}
	for _, l := range st.layer1 {
		n := int32(l.tokens)
		resp.Layer1 = append(resp.Layer1, &memoryv1.LayerUsage{File: l.file, Tokens: n, Limit: int32(l.limit)})
		resp.Layer1Tokens += n
	}
	resp.Runs, resp.AlwaysLoadBlocks = int32(st.runs), int32(st.alwaysLoad)
	return resp
}
