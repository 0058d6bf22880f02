package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/applyplan"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// errNotReadable is a file the read API does not return whole.
var errNotReadable = errors.New("not readable through the read API")

// agentFiles reads an agent's files at HEAD through the read API, each
// once: the current-state files with ReadMemory (deep mode, one file),
// runs and timeline days with GetLayer2, meta.json rebuilt from the meta
// the read answers carry. A file the agent does not have is absent; a file
// the API would only return cut is an error, never a partial text.
func (c *cli) agentFiles(ctx context.Context, cl *clients, agent string) applyplan.Reader {
	type entry struct {
		content string
		ok      bool
		err     error
	}
	cache := map[string]entry{}
	return func(rel string) (string, bool, error) {
		if e, ok := cache[rel]; ok {
			return e.content, e.ok, e.err
		}
		content, ok, err := readAgentFile(ctx, cl, agent, rel)
		if status.Code(err) == codes.NotFound {
			content, ok, err = "", false, nil
		}
		cache[rel] = entry{content, ok, err}
		return content, ok, err
	}
}

func readAgentFile(ctx context.Context, cl *clients, agent, rel string) (string, bool, error) {
	f, err := memlayout.Resolve(agent, rel)
	if err != nil {
		return "", false, err
	}
	switch f.Kind {
	case memlayout.KindSnapshot, memlayout.KindFacts, memlayout.KindOpenLoops, memlayout.KindDecisions, memlayout.KindChangelog:
		resp, err := cl.ca.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: agent, Mode: memoryv1.ReadMode_READ_MODE_DEEP, IncludeFiles: []string{rel}})
		if err != nil {
			return "", false, err
		}
		for _, fc := range resp.GetFiles() {
			if fc.GetFile() == rel {
				if fc.GetTruncated() {
					return "", false, fmt.Errorf("%s is larger than a read returns: %w", rel, errNotReadable)
				}
				return fc.GetContent(), true, nil
			}
		}
		return "", false, nil
	case memlayout.KindRun:
		resp, err := cl.ca.GetLayer2(ctx, &memoryv1.GetLayer2Request{AgentId: agent, Include: []string{"runs"}, RunIds: []string{memlayout.RunIDOfFile(rel)}})
		if err != nil {
			return "", false, err
		}
		for _, r := range resp.GetRuns() {
			if memlayout.RunRef(r.GetRunId()) == memlayout.RunIDOfFile(rel) {
				return r.GetContent(), true, nil
			}
		}
		return "", false, nil
	case memlayout.KindTimeline:
		day := strings.TrimSuffix(strings.TrimPrefix(rel, "timeline/"), ".md")
		resp, err := cl.ca.GetLayer2(ctx, &memoryv1.GetLayer2Request{AgentId: agent, Include: []string{"timeline"}, TimelineFrom: day, TimelineTo: day})
		if err != nil {
			return "", false, err
		}
		for _, d := range resp.GetTimeline() {
			if d.GetDate() == day {
				return d.GetContent(), true, nil
			}
		}
		return "", false, nil
	case memlayout.KindMeta:
		resp, err := cl.ca.GetAgentStatus(ctx, &memoryv1.GetAgentStatusRequest{AgentId: agent})
		if err != nil {
			return "", false, err
		}
		m := resp.GetMeta()
		if m == nil || m.GetVersion() == 0 {
			return "", false, nil
		}
		// The API returns meta.json's figures, not its bytes: the rebuilt
		// file has them in meta.json's own encoding.
		meta := memlayout.Meta{AgentID: m.GetAgentId(), Version: m.GetVersion(), LastUpdate: m.GetLastUpdate().AsTime(),
			LastRunID: m.GetLastRunId(), SnapshotTokenCount: int(m.GetSnapshotTokenCount()), FactsTokenCount: int(m.GetFactsTokenCount()),
			OpenLoopsTokenCount: int(m.GetOpenLoopsTokenCount()), OpenLoopsCount: int(m.GetOpenLoopsCount()), DecisionsCount: int(m.GetDecisionsCount()),
			SchemaVersion: m.GetSchemaVersion(), TokenEncoding: m.GetTokenEncoding(), Layer1SHA256: m.GetChecksum()}
		meta.Layer1TokenCount = meta.SnapshotTokenCount + meta.FactsTokenCount + meta.OpenLoopsTokenCount
		return string(meta.Encode()), true, nil
	}
	return "", false, fmt.Errorf("%s: %w", rel, errNotReadable)
}
