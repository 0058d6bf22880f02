package decisionsvg

import (
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

func date(s string) *timestamppb.Timestamp {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return timestamppb.New(t)
}

func refersTo(from, to string) *memoryv1.Edge {
	return &memoryv1.Edge{FromEntityId: from, ToEntityId: to, Relation: memoryv1.Relation_RELATION_REFERS_TO}
}

// refundChain is what ExplainDecision answers for "Refund idempotency keys
// live in Postgres": the decision, the two it builds on, the entities they
// link. The newest decision also names Postgres directly, an edge that
// skips a layer.
func refundChain() *memoryv1.ExplainDecisionResponse {
	return &memoryv1.ExplainDecisionResponse{
		Chain: []*memoryv1.Decision{
			{Id: "decision-2026-01-05-refund-idempotency-keys-live-in-postgres", Title: "Refund idempotency keys live in Postgres", Status: "accepted", Date: date("2026-01-05")},
			{Id: "decision-2025-11-02-use-postgres-for-payments-state", Title: "Use Postgres for payments state", Status: "accepted", Date: date("2025-11-02")},
			{Id: "decision-2025-06-10-adopt-event-sourcing-for-ledgers", Title: "Adopt event sourcing for ledgers", Status: "superseded", Date: date("2025-06-10")},
		},
		Entities: []*memoryv1.Entity{
			{EntityId: "decision-2025-11-02-use-postgres-for-payments-state", Type: memoryv1.EntityType_ENTITY_TYPE_DECISION, Label: "Use Postgres for payments state"},
			{EntityId: "refunds-api", Type: memoryv1.EntityType_ENTITY_TYPE_ARTIFACT, Label: "Refunds API"},
			{EntityId: "postgres", Type: memoryv1.EntityType_ENTITY_TYPE_CONCEPT, Label: "Postgres"},
		},
		Edges: []*memoryv1.Edge{
			refersTo("decision-2026-01-05-refund-idempotency-keys-live-in-postgres", "decision-2025-11-02-use-postgres-for-payments-state"),
			refersTo("decision-2026-01-05-refund-idempotency-keys-live-in-postgres", "refunds-api"),
			refersTo("decision-2026-01-05-refund-idempotency-keys-live-in-postgres", "postgres"),
			refersTo("decision-2025-11-02-use-postgres-for-payments-state", "postgres"),
			{FromEntityId: "decision-2025-11-02-use-postgres-for-payments-state", ToEntityId: "decision-2025-06-10-adopt-event-sourcing-for-ledgers",
				Relation: memoryv1.Relation_RELATION_FOLLOWS_FROM},
		},
	}
}

// box is a drawn node: its <title> and its rectangle.
type box struct {
	title      string
	class      string
	x, y, w, h float64
	texts      []string
}

func boxes(t *testing.T, root *elem) map[string]box {
	t.Helper()
	out := map[string]box{}
	for _, g := range root.all(func(e *elem) bool { return e.name == "g" && e.hasClass("node") }) {
		title, rect := g.child("title"), g.child("rect")
		require.NotNil(t, title, "every node has a <title>")
		require.NotNil(t, rect)
		b := box{title: title.text, class: g.attrs["class"], x: rect.num(t, "x"), y: rect.num(t, "y"), w: rect.num(t, "width"), h: rect.num(t, "height")}
		for _, c := range g.children {
			if c.name == "text" {
				b.texts = append(b.texts, c.text)
			}
		}
		out[strings.SplitN(title.text, " — ", 2)[0]] = b
	}
	return out
}

func TestChainGolden(t *testing.T) {
	cycle := &memoryv1.ExplainDecisionResponse{
		Chain: []*memoryv1.Decision{
			{Id: "decision-a", Title: "Shard the ledger by merchant", Status: "accepted", Date: date("2026-02-01")},
			{Id: "decision-b", Title: "Keep one writer per shard", Status: "accepted", Date: date("2026-01-20")},
		},
		Edges: []*memoryv1.Edge{refersTo("decision-a", "decision-b"), refersTo("decision-b", "decision-a"), refersTo("decision-b", "ledger")},
	}
	for name, resp := range map[string]*memoryv1.ExplainDecisionResponse{"chain.svg": refundChain(), "chain_cycle.svg": cycle} {
		t.Run(name, func(t *testing.T) {
			svg, err := Chain(resp)
			require.NoError(t, err)
			requireSafe(t, svg)
			golden(t, name, svg)
		})
	}
}

// "A top-down layered DAG (decision boxes with title, date, status; edges
// follows_from / refers_to labelled)": the decision asked about on top,
// what it builds on below, each a layer further down by its longest path.
func TestChainDrawsTheChainTopDown(t *testing.T) {
	svg, err := Chain(refundChain())
	require.NoError(t, err)
	root := requireSafe(t, svg)
	require.Equal(t, "Decision chain: Refund idempotency keys live in Postgres", root.children[0].text)

	b := boxes(t, root)
	require.Len(t, b, 5, "three decisions and two entities, the decision entity drawn once")
	newest, middle, oldest := b["Refund idempotency keys live in Postgres"], b["Use Postgres for payments state"], b["Adopt event sourcing for ledgers"]
	api, pg := b["Refunds API (artifact)"], b["Postgres (concept)"]
	require.Less(t, newest.y, middle.y, "what a decision builds on is below it")
	require.Equal(t, middle.y, api.y, "one layer")
	require.Less(t, middle.y, oldest.y)
	require.Equal(t, oldest.y, pg.y, "Postgres is two steps from the top by its longest path")

	require.Equal(t, []string{"Refund idempotency keys live", "in Postgres", "2026-01-05 · accepted"}, newest.texts, "title (wrapped), date and status")
	require.Equal(t, []string{"Adopt event sourcing for", "ledgers", "2025-06-10 · superseded"}, oldest.texts)
	require.Contains(t, newest.class, "decision")
	require.Contains(t, oldest.class, "status-superseded")
	require.Contains(t, pg.class, "entity")
	require.Contains(t, pg.class, "type-concept")

	edges := root.all(func(e *elem) bool { return e.name == "g" && e.hasClass("edge") })
	require.Len(t, edges, 5)
	var labels []string
	for _, e := range edges {
		require.NotNil(t, e.child("title"), "every edge has a <title>")
		paths := e.all(func(x *elem) bool { return x.name == "path" })
		require.Len(t, paths, 2, "a line and its arrowhead")
		require.Equal(t, "arrow", paths[1].attrs["class"])
		labels = append(labels, e.child("text").text)
	}
	require.ElementsMatch(t, []string{"refers to", "refers to", "refers to", "refers to", "follows from"}, labels)

	// Sized to its content: every box and every arrow inside the picture,
	// with no more than a margin (and half a bend point) around them.
	w, h := root.num(t, "width"), root.num(t, "height")
	require.Equal(t, "0 0 "+root.attrs["width"]+" "+root.attrs["height"], root.attrs["viewBox"])
	var right, bottom float64
	for _, x := range b {
		require.GreaterOrEqual(t, x.x, 0.0)
		require.GreaterOrEqual(t, x.y, 0.0)
		right, bottom = max(right, x.x+x.w), max(bottom, x.y+x.h)
	}
	for _, e := range edges {
		for _, p := range pathPoints(t, e.child("path").attrs["d"]) {
			require.True(t, p[0] >= 0 && p[1] >= 0, "%v", p)
			right, bottom = max(right, p[0]), max(bottom, p[1])
		}
	}
	require.LessOrEqual(t, right, w)
	require.LessOrEqual(t, bottom, h)
	require.InDelta(t, w, right+margin, dummyWidth)
	require.InDelta(t, h, bottom+margin, 1)

	// Light and dark: colours come from the surrounding text colour only.
	require.Equal(t, "currentColor", root.attrs["fill"])
	root.walk(func(e *elem) {
		for _, attr := range []string{"fill", "stroke"} {
			if v, ok := e.attrs[attr]; ok {
				require.Contains(t, []string{"currentColor", "none"}, v, "<%s %s>", e.name, attr)
			}
		}
	})
}

// A cycle in the graph still draws: one of its edges points up.
func TestChainDrawsACycle(t *testing.T) {
	svg, err := Chain(&memoryv1.ExplainDecisionResponse{
		Chain: []*memoryv1.Decision{{Id: "a", Title: "A"}, {Id: "b", Title: "B"}, {Id: "c", Title: "C"}},
		Edges: []*memoryv1.Edge{refersTo("a", "b"), refersTo("b", "c"), refersTo("c", "a")},
	})
	require.NoError(t, err)
	root := requireSafe(t, svg)
	b := boxes(t, root)
	require.Less(t, b["A"].y, b["B"].y)
	require.Less(t, b["B"].y, b["C"].y)
	up := 0
	for _, e := range root.all(func(e *elem) bool { return e.name == "g" && e.hasClass("edge") }) {
		pts := pathPoints(t, e.child("path").attrs["d"])
		if pts[len(pts)-1][1] < pts[0][1] {
			up++
		}
	}
	require.Equal(t, 1, up, "exactly the edge closing the cycle points up")
}

// pathPoints are the points of a path's d attribute (control points too).
func pathPoints(t *testing.T, d string) [][2]float64 {
	t.Helper()
	var nums []float64
	for _, f := range strings.FieldsFunc(d, func(r rune) bool { return r == ' ' || r == ',' || unicode.IsLetter(r) }) {
		v, err := strconv.ParseFloat(f, 64)
		require.NoError(t, err, d)
		nums = append(nums, v)
	}
	require.True(t, len(nums) >= 4 && len(nums)%2 == 0, d)
	var pts [][2]float64
	for i := 0; i < len(nums); i += 2 {
		pts = append(pts, [2]float64{nums[i], nums[i+1]})
	}
	return pts
}

// "Text escaped (XML-escape everything from memory content)": a <script>
// in a title comes out as text, and the SVG parses as XML.
func TestChainKeepsMarkupInMemoryAsText(t *testing.T) {
	title := `<script>alert("pwned")</script> & R&D's "plan"`
	svg, err := Chain(&memoryv1.ExplainDecisionResponse{
		Chain:    []*memoryv1.Decision{{Id: `decision-x"><script>`, Title: title, Status: `"><svg onload=alert(1)>`, Date: date("2026-03-01")}},
		Entities: []*memoryv1.Entity{{EntityId: "e", Label: "]]><![CDATA[<b>bold</b>"}},
		Edges:    []*memoryv1.Edge{refersTo(`decision-x"><script>`, "e")},
	})
	require.NoError(t, err)
	require.Contains(t, svg, "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt; &amp; R&amp;D&apos;s")
	require.NotContains(t, svg, "<script")
	root := requireSafe(t, svg)
	require.Equal(t, "Decision chain: "+title, root.children[0].text, "the title reads as the characters it has")
	b := boxes(t, root)
	require.Contains(t, b, title)
	require.Contains(t, b[title].class, "status-svg-onload-alert-1", "a class is reduced to [a-z0-9-]")
	require.Contains(t, b, "]]><![CDATA[<b>bold</b>")
}

func TestChainIsDeterministic(t *testing.T) {
	resp := refundChain()
	first, err := Chain(resp)
	require.NoError(t, err)
	for range 20 {
		again, err := Chain(proto.Clone(resp).(*memoryv1.ExplainDecisionResponse))
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
}

// Several pictures on one page cannot clash: a picture has no ids (its
// arrowheads are drawn, not markers found by id).
func TestChainHasNoIDs(t *testing.T) {
	svg, err := Chain(refundChain())
	require.NoError(t, err)
	parseSVG(t, svg).walk(func(e *elem) {
		require.NotContains(t, e.attrs, "id", "<%s>", e.name)
	})
}

func TestChainWithNothingToDraw(t *testing.T) {
	for _, resp := range []*memoryv1.ExplainDecisionResponse{nil, {}, {Entities: []*memoryv1.Entity{{EntityId: "x"}}}} {
		_, err := Chain(resp)
		require.ErrorIs(t, err, ErrNothingToDraw)
	}
}

// Long titles wrap within the box and end in "…" past three lines; the
// full title stays in the node's <title>.
func TestChainWrapsLongTitles(t *testing.T) {
	long := strings.Repeat("replicate the ledger across three regions ", 6)
	svg, err := Chain(&memoryv1.ExplainDecisionResponse{Chain: []*memoryv1.Decision{{Id: "d", Title: long}}})
	require.NoError(t, err)
	b := boxes(t, requireSafe(t, svg))
	n := b[strings.TrimSpace(long)]
	require.Len(t, n.texts, 3)
	require.True(t, strings.HasSuffix(n.texts[2], "…"))
	for _, l := range n.texts {
		require.LessOrEqual(t, utf8.RuneCountInString(l), titlePerLine)
	}
}

// Whatever a memory file holds, the picture is well-formed, holds only
// drawing elements, and the title reads as the text it was (white space
// folded; characters XML cannot carry shown as U+FFFD).
func FuzzChainKeepsMemoryContentAsText(f *testing.F) {
	f.Add("Use <b>Postgres</b> & friends", "accepted", "Refunds API", "refunds-api")
	f.Add(`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`, "]]>", "a&b")
	f.Add("\x00\x01\ufffe bad \xff bytes", "\u202e", "\U0001F600 emoji 漢字", "")
	f.Fuzz(func(t *testing.T, title, status, label, entityID string) {
		resp := &memoryv1.ExplainDecisionResponse{
			Chain:    []*memoryv1.Decision{{Id: "decision-x", Title: title, Status: status, Date: date("2026-01-01")}},
			Entities: []*memoryv1.Entity{{EntityId: entityID, Label: label}},
			Edges:    []*memoryv1.Edge{refersTo("decision-x", entityID)},
		}
		svg, err := Chain(resp)
		require.NoError(t, err)
		root := requireSafe(t, svg)
		got := strings.TrimPrefix(root.children[0].text, "Decision chain: ")
		if utf8.ValidString(title) && !strings.ContainsFunc(title, func(r rune) bool {
			return !unicode.IsSpace(r) && (r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0xfffe || r == 0xffff)
		}) && strings.TrimSpace(title) != "" {
			require.Equal(t, strings.Join(strings.Fields(title), " "), got)
		}
		again, err := Chain(resp)
		require.NoError(t, err)
		require.Equal(t, svg, again)
	})
}

// The console draws a chain per page view: it must cost far less than the
// page's 50 ms budget.
func BenchmarkChain(b *testing.B) {
	resp := refundChain()
	for b.Loop() {
		if _, err := Chain(resp); err != nil {
			b.Fatal(err)
		}
	}
}
