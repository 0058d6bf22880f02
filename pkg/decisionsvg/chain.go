package decisionsvg

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/enumname"
)

// Box sizes of the chain, in pixels.
const (
	titlePerLine  = 30 // runes of a title line
	titleLines    = 3
	labelLines    = 2
	boxPad        = 10
	minBoxWidth   = 140
	layerGap      = 56 // between layers: room for the edge labels
	nodeGap       = 28
	dummyWidth    = 8 // a long edge's bend point in a layer it crosses
	arrowLength   = 8
	arrowWidth    = 8
	edgeLabelSize = smallSize
)

// Chain draws a decision chain: every decision of resp.Chain and every
// entity of resp.Entities as a box (decisions rounded, with their date and
// status; entities square, with their type), every edge of resp.Edges as an
// arrow labelled with its relation ("refers to", "follows from"). Layers go
// top-down by the longest path from the decision asked about (the chain's
// first), so what a decision builds on sits below it; within a layer, boxes
// are ordered by the barycentre of their neighbours. An edge whose end is
// in neither list gets a box with its id. A cycle is drawn with one edge
// pointing up.
//
// It returns ErrNothingToDraw for a nil response or one without decisions.
func Chain(resp *memoryv1.ExplainDecisionResponse) (string, error) {
	if resp == nil || len(resp.GetChain()) == 0 {
		return "", ErrNothingToDraw
	}
	g := chainGraph(resp)
	l := layout(g)

	var b svgBuilder
	first := clean(resp.GetChain()[0].GetTitle())
	if first == "" {
		first = clean(resp.GetChain()[0].GetId())
	}
	b.open("gb-chain", l.width, l.height, "Decision chain: "+first)
	decisions, entities := 0, 0
	for _, n := range g.nodes {
		if n.decision {
			decisions++
		} else {
			entities++
		}
	}
	b.WriteString("<desc>" + esc(fmt.Sprintf("%s, %s, %s; arrows point to what a decision builds on.",
		plural(decisions, "decision", "decisions"), plural(entities, "entity", "entities"), plural(len(g.edges), "link", "links"))) + "</desc>\n")
	for i, e := range g.edges {
		drawEdge(&b, g, l, i, e)
	}
	for i, n := range g.nodes {
		drawNode(&b, l.pos[i], n)
	}
	b.close()
	return b.String(), nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// node is a box of the chain.
type node struct {
	id       string
	decision bool
	// lines are the box's title lines; meta its small second line (date
	// and status, or the entity type); tooltip its full <title>.
	lines         []string
	meta, tooltip string
	class         string
	width, height float64
}

// edge is an arrow from one box to another, with every relation the
// response gives between the two.
type edge struct {
	from, to  int
	relations []string
}

type graph struct {
	nodes []node
	edges []edge
}

// chainGraph collects the boxes in input order (the chain, then the
// entities, then ends only edges name) and merges parallel edges.
func chainGraph(resp *memoryv1.ExplainDecisionResponse) *graph {
	g := &graph{}
	index := map[string]int{}
	add := func(n node) {
		if _, ok := index[n.id]; ok {
			return
		}
		index[n.id] = len(g.nodes)
		g.nodes = append(g.nodes, n)
	}
	for _, d := range resp.GetChain() {
		add(decisionNode(d))
	}
	for _, e := range resp.GetEntities() {
		add(entityNode(e))
	}
	for _, e := range resp.GetEdges() {
		for _, id := range []string{e.GetFromEntityId(), e.GetToEntityId()} {
			add(entityNode(&memoryv1.Entity{EntityId: id}))
		}
	}
	pair := map[[2]int]int{}
	for _, e := range resp.GetEdges() {
		from, to := index[e.GetFromEntityId()], index[e.GetToEntityId()]
		if from == to {
			continue // a self-reference says nothing in a picture
		}
		rel := relationText(e.GetRelation())
		k := [2]int{from, to}
		if i, ok := pair[k]; ok {
			if !slices.Contains(g.edges[i].relations, rel) {
				g.edges[i].relations = append(g.edges[i].relations, rel)
			}
			continue
		}
		pair[k] = len(g.edges)
		g.edges = append(g.edges, edge{from: from, to: to, relations: []string{rel}})
	}
	return g
}

func relationText(r memoryv1.Relation) string {
	return strings.ReplaceAll(enumname.Name(r), "_", " ")
}

func decisionNode(d *memoryv1.Decision) node {
	title := clean(d.GetTitle())
	if title == "" {
		title = clean(d.GetId())
	}
	var meta []string
	if d.GetDate() != nil {
		meta = append(meta, d.GetDate().AsTime().UTC().Format("2006-01-02"))
	}
	if st := clean(d.GetStatus()); st != "" {
		meta = append(meta, st)
	}
	n := node{id: d.GetId(), decision: true, lines: wrap(title, titlePerLine, titleLines), meta: strings.Join(meta, " · ")}
	n.tooltip = title
	if n.meta != "" {
		n.tooltip += " — " + n.meta
	}
	n.class = "node decision"
	if st := classPart(d.GetStatus()); st != "" {
		n.class += " status-" + st
	}
	n.size()
	return n
}

func entityNode(e *memoryv1.Entity) node {
	label := clean(e.GetLabel())
	if label == "" {
		label = clean(e.GetEntityId())
	}
	n := node{id: e.GetEntityId(), lines: wrap(label, titlePerLine, labelLines), class: "node entity"}
	if e.GetType() != memoryv1.EntityType_ENTITY_TYPE_UNSPECIFIED {
		n.meta = strings.ReplaceAll(enumname.Name(e.GetType()), "_", " ")
		n.class += " type-" + classPart(n.meta)
	}
	n.tooltip = label
	if n.meta != "" {
		n.tooltip += " (" + n.meta + ")"
	}
	n.size()
	return n
}

// size fits the box to its text.
func (n *node) size() {
	w := textWidth(n.meta) * smallPerChar
	for _, l := range n.lines {
		w = max(w, textWidth(l))
	}
	n.width = max(minBoxWidth, w+2*boxPad)
	n.height = float64(len(n.lines))*lineHeight + 2*boxPad
	if n.meta != "" {
		n.height += lineHeight - 2
	}
}

func drawNode(b *svgBuilder, p point, n node) {
	b.WriteString(`<g class="` + n.class + `">` + "\n")
	b.WriteString("<title>" + esc(n.tooltip) + "</title>\n")
	rx := "2"
	if n.decision {
		rx = "8"
	}
	b.WriteString(`<rect x="` + px(p.x) + `" y="` + px(p.y) + `" width="` + px(n.width) + `" height="` + px(n.height) +
		`" rx="` + rx + `" fill="currentColor" fill-opacity="0.06" stroke="currentColor" stroke-width="1.5"`)
	if !n.decision {
		b.WriteString(` stroke-dasharray="4 3"`)
	}
	b.WriteString("/>\n")
	cx := p.x + n.width/2
	y := p.y + boxPad + fontSize
	for _, l := range n.lines {
		b.text("title", cx, y, "middle", l, fontSize)
		y += lineHeight
	}
	if n.meta != "" {
		b.text("meta", cx, y, "middle", n.meta, smallSize)
	}
	b.WriteString("</g>\n")
}

func drawEdge(b *svgBuilder, g *graph, l *chainLayout, i int, e edge) {
	lb := l.labels[i]
	class := "edge"
	for _, r := range e.relations {
		class += " rel-" + classPart(r)
	}
	b.WriteString(`<g class="` + class + `">` + "\n")
	b.WriteString("<title>" + esc(g.nodes[e.from].tooltip+" — "+lb.text+" → "+g.nodes[e.to].tooltip) + "</title>\n")
	pts := l.route[i]
	var d strings.Builder
	d.WriteString("M" + px(pts[0].x) + "," + px(pts[0].y))
	for k := 1; k < len(pts); k++ {
		a, c := pts[k-1], pts[k]
		if a.x == c.x {
			d.WriteString(" L" + px(c.x) + "," + px(c.y))
			continue
		}
		my := (a.y + c.y) / 2
		d.WriteString(" C" + px(a.x) + "," + px(my) + " " + px(c.x) + "," + px(my) + " " + px(c.x) + "," + px(c.y))
	}
	b.WriteString(`<path d="` + d.String() + `" fill="none" stroke="currentColor" stroke-width="1.2"/>` + "\n")
	// The arrowhead is drawn, not a <marker>: a marker is found by id, and
	// two pictures on one page (or one in light, one in dark) would share
	// the first one's colour. Every route ends vertically.
	tip, from := pts[len(pts)-1], pts[len(pts)-2]
	dy := -float64(arrowLength) // pointing down: the base is above the tip
	if from.y > tip.y {
		dy = arrowLength
	}
	b.WriteString(`<path class="arrow" d="M` + px(tip.x-arrowWidth/2) + "," + px(tip.y+dy) + " L" + px(tip.x) + "," + px(tip.y) +
		" L" + px(tip.x+arrowWidth/2) + "," + px(tip.y+dy) + ` z" fill="currentColor"/>` + "\n")
	b.text("label", lb.at.x+labelOffset, lb.at.y+4, "start", lb.text, edgeLabelSize)
	b.WriteString("</g>\n")
}
