package memlayout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

func TestResolve(t *testing.T) {
	ok := []struct {
		rel, path string
		kind      Kind
		layer     int
	}{
		{"snapshot.md", "memory/cur/snapshot.md", KindSnapshot, 1},
		{"facts.md", "memory/cur/facts.md", KindFacts, 1},
		{"open_loops.md", "memory/cur/open_loops.md", KindOpenLoops, 1},
		{"decisions.md", "memory/cur/decisions.md", KindDecisions, 2},
		{"changelog.md", "memory/cur/changelog.md", KindChangelog, 2},
		{"timeline/2026-02-17.md", "memory/cur/timeline/2026-02-17.md", KindTimeline, 2},
		{"runs/run_abc-1.md", "memory/cur/runs/run_abc-1.md", KindRun, 2},
		{"meta.json", "memory/cur/meta.json", KindMeta, 0},
		{"policy.json", "memory/cur/policy.json", KindPolicy, 0},
		{"logic/current.pseudo.md", "logic/cur/current.pseudo.md", KindLogicPseudo, 0},
		{"logic/current.drakon.json", "logic/cur/current.drakon.json", KindLogicDrakon, 0},
	}
	for _, tt := range ok {
		f, err := Resolve("cur", tt.rel)
		require.NoError(t, err, tt.rel)
		require.Equal(t, tt.path, f.Path)
		require.Equal(t, tt.kind, f.Kind)
		require.Equal(t, tt.layer, f.Layer)
	}
	for _, bad := range []string{"", "../x.md", "/etc/passwd", "facts.md/../../x", "Facts.md", "runs/run_.md",
		"runs/../facts.md", "runs/run_a/b.md", "timeline/2026-2-1.md", "notes.md", "facts.md ", "memory/cur/facts.md",
		"logic/current.pseudo.md/..", "..\\facts.md", "ｆacts.md"} {
		_, err := Resolve("cur", bad)
		require.ErrorIs(t, err, ErrInvalidPath, "%q", bad)
	}
	for _, agent := range []string{"", "Cur", "-cur", "cur/../x", "a b"} {
		_, err := Resolve(agent, "facts.md")
		require.Error(t, err, "%q", agent)
	}
	require.Equal(t, "run_abc-1", RunIDOfFile("runs/run_abc-1.md"))
	require.Equal(t, "run_x", RunRef("x"))
	require.Equal(t, "run_x", RunRef("run_x"))
}

func TestCheckOperation(t *testing.T) {
	facts, _ := Resolve("a", "facts.md")
	require.NoError(t, CheckOperation(facts, memoryv1.Operation_OPERATION_APPEND))
	require.ErrorIs(t, CheckOperation(facts, memoryv1.Operation_OPERATION_REPLACE), ErrInvalidOperation)
	cl, _ := Resolve("a", "changelog.md")
	require.ErrorIs(t, CheckOperation(cl, memoryv1.Operation_OPERATION_REPLACE), ErrInvalidOperation)
	meta, _ := Resolve("a", "meta.json")
	require.ErrorIs(t, CheckOperation(meta, memoryv1.Operation_OPERATION_REPLACE), ErrInvalidOperation)
}

func TestMetaRoundTrip(t *testing.T) {
	m := Meta{AgentID: "a", Version: 42, LastUpdate: time.Date(2026, 2, 17, 14, 30, 0, 0, time.UTC), SchemaVersion: SchemaVersion}
	back, err := ParseMeta(m.Encode())
	require.NoError(t, err)
	require.Equal(t, m, back)
	zero, err := ParseMeta(nil)
	require.NoError(t, err)
	require.Equal(t, int32(0), zero.Version)
	_, err = ParseMeta([]byte("{"))
	require.Error(t, err)
}

func TestPolicy(t *testing.T) {
	p, err := ParsePolicy([]byte(`{"autoApprove": true, "reviewers": ["alice"]}`))
	require.NoError(t, err)
	require.True(t, p.AutoApprove)
	require.True(t, p.MayReview("alice"))
	require.False(t, p.MayReview("bob"))
	require.True(t, Policy{}.MayReview("bob"))
	_, err = ParsePolicy([]byte(`{"autoAprove": true}`))
	require.Error(t, err)
	_, err = ParsePolicy([]byte(`{} {}`))
	require.Error(t, err)
	back, err := ParsePolicy(p.Encode())
	require.NoError(t, err)
	require.Equal(t, p, back)
}
