package decisionsvg

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

func at(s string) *timestamppb.Timestamp {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return timestamppb.New(t)
}

var timelineNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// postgres is what GetEntity answers for an entity whose relations came
// and went: a link to the ledger that held for a while, two that hold, one
// pointing to it.
func postgres() (*memoryv1.Entity, []*memoryv1.Edge) {
	e := &memoryv1.Entity{EntityId: "postgres", Type: memoryv1.EntityType_ENTITY_TYPE_CONCEPT, Label: "Postgres"}
	edges := []*memoryv1.Edge{
		{FromEntityId: "postgres", ToEntityId: "refunds-api", Relation: memoryv1.Relation_RELATION_RELATES_TO, ValidFrom: at("2026-01-05T09:12:00Z")},
		{FromEntityId: "postgres", ToEntityId: "ledger", Relation: memoryv1.Relation_RELATION_RELATES_TO,
			ValidFrom: at("2025-11-02T10:00:00Z"), ValidTo: at("2026-01-20T16:30:00Z")},
		{FromEntityId: "decision-2025-11-02-use-postgres-for-payments-state", ToEntityId: "postgres", Relation: memoryv1.Relation_RELATION_REFERS_TO,
			ValidFrom: at("2025-11-02T10:00:00Z")},
		{FromEntityId: "postgres", ToEntityId: "payments-bot", Relation: memoryv1.Relation_RELATION_MENTIONS, ValidFrom: at("2025-10-20T08:00:00Z")},
	}
	return e, edges
}

type bar struct {
	label, title, class string
	x0, x1              float64
}

func bars(t *testing.T, root *elem) []bar {
	t.Helper()
	var out []bar
	for _, g := range root.all(func(e *elem) bool { return e.name == "g" && e.hasClass("bar") }) {
		rect := g.child("rect")
		require.NotNil(t, g.child("title"), "every bar has a <title>")
		x := rect.num(t, "x")
		out = append(out, bar{label: g.child("text").text, title: g.child("title").text, class: g.attrs["class"], x0: x, x1: x + rect.num(t, "width")})
	}
	return out
}

func TestTimelineGolden(t *testing.T) {
	e, edges := postgres()
	svg, err := Timeline(e, edges, timelineNow)
	require.NoError(t, err)
	requireSafe(t, svg)
	golden(t, "timeline.svg", svg)

	empty, err := Timeline(&memoryv1.Entity{EntityId: "lonely", Label: "Lonely"}, nil, timelineNow)
	require.NoError(t, err)
	requireSafe(t, empty)
	golden(t, "timeline_empty.svg", empty)
}

// "An entity's edges over time ... as horizontal bars on a time axis": one
// bar per edge from valid_from to valid_to, or to now while it holds,
// ordered by when they appeared.
func TestTimelineDrawsEachRelationFromItsStartToItsEnd(t *testing.T) {
	e, edges := postgres()
	svg, err := Timeline(e, edges, timelineNow)
	require.NoError(t, err)
	root := requireSafe(t, svg)
	require.Equal(t, "Relations of Postgres over time", root.children[0].text)

	b := bars(t, root)
	require.Len(t, b, 4)
	require.Equal(t, []string{"→ mentions payments-bot", "← refers to decision-2025-11-02-use-postgre…", "→ relates to ledger",
		"→ relates to refunds-api"}, []string{b[0].label, b[1].label, b[2].label, b[3].label}, "oldest first; ties by the other entity")
	require.True(t, strings.HasPrefix(b[1].title, "← refers to decision-2025-11-02-use-postgres-for-payments-state: "), "a long label is cut; its <title> is whole")
	for k := 1; k < len(b); k++ {
		require.LessOrEqual(t, b[k-1].x0, b[k].x0, "a later start is further right")
	}
	ledger, refunds := b[2], b[3]
	require.Contains(t, ledger.class, "closed")
	require.Contains(t, refunds.class, "open")
	require.Less(t, ledger.x1, refunds.x1, "a relation that ended stops before one that holds")
	require.Equal(t, "→ relates to ledger: 2025-11-02 10:00 – 2026-01-20 16:30 UTC", ledger.title)
	require.Equal(t, "→ relates to refunds-api: 2026-01-05 09:12 – now (holds) UTC", refunds.title)

	// Bars that hold run to the "now" line.
	now := root.all(func(e *elem) bool { return e.name == "g" && e.hasClass("now") })
	require.Len(t, now, 1)
	nowX := now[0].child("line").num(t, "x1")
	require.InDelta(t, nowX, refunds.x1, 1)
	require.InDelta(t, nowX, b[0].x1, 1)

	// The axis is labelled with dates within the picture.
	var ticks []string
	for _, tx := range root.all(func(e *elem) bool { return e.name == "text" && e.hasClass("meta") }) {
		ticks = append(ticks, tx.text)
	}
	require.Contains(t, ticks, "Jan 2026")
	w := root.num(t, "width")
	for _, x := range b {
		require.True(t, x.x0 >= 0 && x.x1 <= w, "%+v inside %v", x, w)
	}
}

func TestTimelineRefusesEdgesItCannotPlace(t *testing.T) {
	e := &memoryv1.Entity{EntityId: "postgres"}
	for name, c := range map[string]struct {
		edge *memoryv1.Edge
		want string
	}{
		"no start":       {&memoryv1.Edge{FromEntityId: "postgres", ToEntityId: "x"}, "has no valid_from"},
		"ends too early": {&memoryv1.Edge{FromEntityId: "postgres", ToEntityId: "x", ValidFrom: at("2026-02-01T00:00:00Z"), ValidTo: at("2026-01-01T00:00:00Z")}, "ends before it starts"},
		"another's edge": {&memoryv1.Edge{FromEntityId: "a", ToEntityId: "b", ValidFrom: at("2026-02-01T00:00:00Z")}, `does not touch entity "postgres"`},
		"nil":            {nil, "edge 0 is nil"},
	} {
		_, err := Timeline(e, []*memoryv1.Edge{c.edge}, timelineNow)
		require.ErrorContains(t, err, c.want, name)
	}
	_, err := Timeline(nil, nil, timelineNow)
	require.ErrorIs(t, err, ErrNothingToDraw)
}

// One instant, or relations centuries apart: the axis still has ticks and
// every bar stays inside the picture.
func TestTimelineAxisAtAnyScale(t *testing.T) {
	for name, edges := range map[string][]*memoryv1.Edge{
		"one instant": {{FromEntityId: "e", ToEntityId: "x", ValidFrom: at("2026-02-01T10:00:00Z"), ValidTo: at("2026-02-01T10:00:00Z")}},
		"hours":       {{FromEntityId: "e", ToEntityId: "x", ValidFrom: at("2026-02-28T20:00:00Z")}},
		"centuries": {
			{FromEntityId: "e", ToEntityId: "x", ValidFrom: at("0001-01-01T00:00:00Z"), ValidTo: at("0002-01-01T00:00:00Z")},
			{FromEntityId: "e", ToEntityId: "y", ValidFrom: at("9000-01-01T00:00:00Z"), ValidTo: at("9999-12-31T00:00:00Z")},
		},
	} {
		svg, err := Timeline(&memoryv1.Entity{EntityId: "e"}, edges, timelineNow)
		require.NoError(t, err, name)
		root := requireSafe(t, svg)
		ticks := root.all(func(e *elem) bool { return e.name == "line" && e.hasClass("tick") })
		require.NotEmpty(t, ticks, name)
		require.LessOrEqual(t, len(ticks), 4*maxTicks, name)
		w := root.num(t, "width")
		for _, b := range bars(t, root) {
			require.True(t, b.x0 >= 0 && b.x1 <= w, "%s: %+v inside %v", name, b, w)
		}
	}
}

// Entity ids and labels from memory are text in the timeline too.
func FuzzTimelineKeepsMemoryContentAsText(f *testing.F) {
	f.Add("Postgres", "postgres", "refunds-api")
	f.Add("<script>alert(1)</script>", `"><g onload=x>`, "]]>&amp;")
	f.Add("\x00\xff", "\u2028", "\U0001F600")
	f.Fuzz(func(t *testing.T, label, id, other string) {
		if id == other {
			other += "-other"
		}
		edges := []*memoryv1.Edge{{FromEntityId: id, ToEntityId: other, ValidFrom: at("2026-01-01T00:00:00Z")},
			{FromEntityId: other, ToEntityId: id, ValidFrom: at("2026-02-01T00:00:00Z"), ValidTo: at("2026-02-10T00:00:00Z")}}
		svg, err := Timeline(&memoryv1.Entity{EntityId: id, Label: label}, edges, timelineNow)
		require.NoError(t, err)
		root := requireSafe(t, svg)
		require.True(t, strings.HasPrefix(root.children[0].text, "Relations of "))
		require.Len(t, bars(t, root), 2)
	})
}

func BenchmarkTimeline(b *testing.B) {
	e, edges := postgres()
	for b.Loop() {
		if _, err := Timeline(e, edges, timelineNow); err != nil {
			b.Fatal(err)
		}
	}
}
