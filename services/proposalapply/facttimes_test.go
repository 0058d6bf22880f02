package proposalapply

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// A fact read all the time rewrites its agent's index at most once per
// UsageResolution, and a flush saves exactly the changed documents.
func TestFactUsageResolution(t *testing.T) {
	ctx := context.Background()
	store, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f := newFactTimes(store, func() time.Time { return t0 }, discard)

	n, err := f.Used(ctx, "a", map[string]time.Time{"h1": t0})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.True(t, f.dirty["a"])
	require.NoError(t, f.Flush(ctx))
	require.Empty(t, f.dirty)

	n, err = f.Used(ctx, "a", map[string]time.Time{"h1": t0.Add(10 * time.Minute)})
	require.NoError(t, err)
	require.Equal(t, 1, n, "the report is accepted")
	require.False(t, f.dirty["a"], "but within the resolution nothing needs saving")

	_, err = f.Used(ctx, "a", map[string]time.Time{"h1": t0.Add(UsageResolution)})
	require.NoError(t, err)
	require.True(t, f.dirty["a"])
	require.NoError(t, f.Flush(ctx))

	reloaded := newFactTimes(store, func() time.Time { return t0 }, discard)
	doc, err := reloaded.load(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, t0.Add(UsageResolution), doc.Facts["h1"].Used, "the flushed document holds the newer use")
}

// The hand-written encoding of a fact index is byte for byte what
// encoding/json writes, so documents read back the same either way.
func TestFactDocJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	keys := []string{"8f3a", "", "a\"b", "<tag>&", "é", "tab\there", "0123456789abcdef0123456789abcdef01234567"}
	for i := range 200 {
		d := &factDoc{Since: base.Add(time.Duration(rng.Int64N(1e15))), Facts: map[string]*factTime{}}
		if i%7 == 0 {
			d.Since = d.Since.In(time.FixedZone("x", 3600))
		}
		for range rng.IntN(6) {
			ft := &factTime{}
			if rng.IntN(3) > 0 {
				ft.Added = base.Add(time.Duration(rng.Int64N(1e15)))
			}
			if rng.IntN(3) > 0 {
				ft.Used = base.Add(time.Duration(rng.Int64N(1e15)) / time.Second * time.Second)
			}
			if rng.IntN(2) > 0 {
				ft.Version = rng.Int32N(1 << 20)
			}
			d.Facts[keys[rng.IntN(len(keys))]+fmt.Sprint(rng.IntN(50))] = ft
		}
		want, err := json.Marshal(d)
		require.NoError(t, err)
		require.Equal(t, string(want), string(d.appendJSON(nil)))
	}
}

// A document with a null entry (edited by hand) loads as if the entry were
// absent, and is saved without it.
func TestFactDocNullEntry(t *testing.T) {
	ctx := context.Background()
	store, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	_, err = blob.PutBytes(ctx, store, factKey("a"), []byte(`{"since":"2026-11-01T12:00:00Z","facts":{"h1":null,"h2":{"added":"2026-11-02T12:00:00Z"}}}`), blob.PutOptions{})
	require.NoError(t, err)
	f := newFactTimes(store, time.Now, discard)
	recordOf, err := f.RecordsOf(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), recordOf("unknown fact").Added)
	require.Zero(t, recordOf("unknown fact").Version)
	require.NoError(t, f.update(ctx, "a", func(d *factDoc) int { return 1 }))
	require.NoError(t, f.Flush(ctx))
	data, _, err := blob.GetBytes(ctx, store, factKey("a"))
	require.NoError(t, err)
	require.Equal(t, `{"since":"2026-11-01T12:00:00Z","facts":{"h2":{"added":"2026-11-02T12:00:00Z"}}}`, string(data))
}

// A document that does not parse (damaged, or edited by hand) starts afresh
// instead of failing the agent's applies.
func TestFactDocUnreadableStartsAfresh(t *testing.T) {
	ctx := context.Background()
	store, err := blob.NewFS(t.TempDir())
	require.NoError(t, err)
	_, err = blob.PutBytes(ctx, store, factKey("a"), []byte(`{"since":"2026-11-01T12:00:00Z","facts":{"h1":{"add`), blob.PutOptions{})
	require.NoError(t, err)
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	var logs strings.Builder
	f := newFactTimes(store, func() time.Time { return now }, slog.New(slog.NewTextHandler(&logs, nil)))
	recordOf, err := f.RecordsOf(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, now, recordOf("any fact").Added, "no times known: every fact counts as added now")
	require.Contains(t, logs.String(), "unreadable fact index")
	require.NoError(t, f.Added(ctx, "a", []string{"a new fact"}, now, 3))
	require.NoError(t, f.Flush(ctx))
	data, _, err := blob.GetBytes(ctx, store, factKey("a"))
	require.NoError(t, err)
	require.True(t, json.Valid(data), "the next flush replaces it")
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// The fact index holds records of the facts in the agent's facts.md only
// (issue #25: "the fact index is pruned as facts leave"; it grew with
// every usage report of a fact evicted before the report came, to 1,280
// records beside 279 facts in a soak, each copied by every plan): a usage
// report of a fact that is not there — never was, or has left — is not
// accepted and not recorded, and an apply that changes facts.md drops the
// records of facts a person removed with git.
func TestFactIndexHoldsOnlyFactsInFactsMD(t *testing.T) {
	e := newEnv(t, autoApprove)
	ctx := context.Background()
	apply := func(run, facts string) {
		resp := e.propose(&memoryv1.ProposeRequest{AgentId: "fi", RunId: run, Updates: []*memoryv1.FileUpdate{appendFact("Domain", facts)}})
		e.waitApplied(resp.GetProposalId())
		// The index is updated after the outcome is recorded.
		require.NoError(t, e.svc.WaitIdle(ctx))
	}
	report := func(texts ...string) int32 {
		req := &memoryv1.ReportFactUsageRequest{AgentId: "fi"}
		for _, text := range texts {
			req.Usages = append(req.Usages, &memoryv1.FactUsage{FactHash: mdops.FactHash(text)})
		}
		resp, err := e.client.ReportFactUsage(e.service(), req)
		require.NoError(t, err)
		return resp.GetAccepted()
	}
	hashes := func(texts ...string) []string {
		var hs []string
		for _, text := range texts {
			hs = append(hs, mdops.FactHash(text))
		}
		return hs
	}
	records := func() []string {
		f := e.svc.facts
		f.mu.Lock()
		defer f.mu.Unlock()
		doc, err := f.load(ctx, "fi")
		require.NoError(t, err)
		return slices.Collect(maps.Keys(doc.Facts))
	}

	apply("run_1", "- kept fact one\n- kept fact two\n- fact a person removes")
	require.ElementsMatch(t, hashes("kept fact one", "kept fact two", "fact a person removes"), records())
	require.Equal(t, int32(1), report("kept fact one", "never a fact of this agent"), "only the fact in facts.md is accepted")
	require.ElementsMatch(t, hashes("kept fact one", "kept fact two", "fact a person removes"), records())

	facts := e.file("fi", "facts.md")
	require.Contains(t, facts, "- fact a person removes\n")
	head, err := e.repo.Head(ctx)
	require.NoError(t, err)
	_, err = e.repo.Commit(ctx, memrepo.CommitRequest{Parent: head, Message: "a person removes a fact",
		Changes: []memrepo.Change{{Path: "memory/fi/facts.md", Content: []byte(strings.Replace(facts, "- fact a person removes\n", "", 1))}}})
	require.NoError(t, err)
	require.Equal(t, int32(0), report("fact a person removes"), "a fact no longer in facts.md is not accepted")

	apply("run_2", "- a new fact")
	require.ElementsMatch(t, hashes("kept fact one", "kept fact two", "a new fact"), records(),
		"the apply that changed facts.md dropped the record of the fact the person removed")
}
