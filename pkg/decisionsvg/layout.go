package decisionsvg

import (
	"slices"
	"strings"
)

// The chain's layout is a small Sugiyama-style layering, enough for the
// handful of boxes a decision chain has: cycles broken by depth-first
// search in input order, layers by longest path, one bend point per layer
// a long edge crosses, order within layers by barycentre sweeps, each
// layer centred. Every step goes by input order and breaks ties by it, so
// the same graph always lays out the same.

// point is a position in the picture.
type point struct{ x, y float64 }

// chainLayout is where everything goes.
type chainLayout struct {
	width, height float64
	// pos is each box's top-left corner.
	pos []point
	// route lists, per edge, the points its arrow passes through, from the
	// edge's source to its target.
	route [][]point
	// labels place each edge's label.
	labels []edgeLabel
}

// edgeLabel is an edge's label and the point on the edge it is next to;
// it runs to the right of it.
type edgeLabel struct {
	at   point
	text string
}

// labelOffset is the space between an edge and its label.
const labelOffset = 6

// extent is the label's left and right end.
func (lb edgeLabel) extent() (float64, float64) {
	return lb.at.x + labelOffset, lb.at.x + labelOffset + textWidth(lb.text)*smallPerChar
}

// vertex is a box, or a bend point of a long edge (box -1).
type vertex struct {
	box   int
	layer int
}

// layered is a graph being laid out.
type layered struct {
	g *graph
	// reversed marks the edges that close a cycle: laid out pointing down
	// like the others, drawn pointing up.
	reversed []bool
	// verts are the boxes (same indexes as g.nodes), then the bend points.
	verts []vertex
	// chains lists each edge's vertices, top-down.
	chains [][]int
	// ups and downs are each vertex's neighbours a layer up and down.
	ups, downs [][]int
	// rows are the vertices of each layer, left to right.
	rows [][]int
	// center is each vertex's horizontal centre and its layer's top.
	center []point
	// top and height are each layer's top and height.
	top, height []float64
}

// layout places the boxes and routes the edges of g.
func layout(g *graph) *chainLayout {
	l := &layered{g: g}
	l.layer()
	l.order()
	width, height := l.place()
	out := &chainLayout{width: width, height: height}
	for i, n := range g.nodes {
		out.pos = append(out.pos, point{l.center[i].x - n.width/2, l.center[i].y})
	}
	out.route, out.labels = l.routes()
	out.fitLabels()
	return out
}

// layer breaks cycles, puts every box on its layer (the longest path to
// it) and adds a bend point for every layer a long edge crosses.
func (l *layered) layer() {
	g := l.g
	n := len(g.nodes)
	out := make([][]int, n) // edges by source, in input order
	for i, e := range g.edges {
		out[e.from] = append(out[e.from], i)
	}
	l.reversed = backEdges(g, out)
	layer := make([]int, n)
	preds := make([][]int, n)
	for i := range g.edges {
		u, v := l.down(i)
		preds[v] = append(preds[v], u)
	}
	for _, v := range topoOrder(n, len(g.edges), l.down) {
		for _, u := range preds[v] {
			layer[v] = max(layer[v], layer[u]+1)
		}
	}
	for i := range n {
		l.verts = append(l.verts, vertex{box: i, layer: layer[i]})
	}
	for i := range g.edges {
		u, v := l.down(i)
		chain := []int{u}
		for k := layer[u] + 1; k < layer[v]; k++ {
			l.verts = append(l.verts, vertex{box: -1, layer: k})
			chain = append(chain, len(l.verts)-1)
		}
		l.chains = append(l.chains, append(chain, v))
	}
	l.ups, l.downs = make([][]int, len(l.verts)), make([][]int, len(l.verts))
	for _, chain := range l.chains {
		for k := 1; k < len(chain); k++ {
			l.downs[chain[k-1]] = append(l.downs[chain[k-1]], chain[k])
			l.ups[chain[k]] = append(l.ups[chain[k]], chain[k-1])
		}
	}
	layers := 0
	for _, v := range l.verts {
		layers = max(layers, v.layer+1)
	}
	l.rows = make([][]int, layers)
	for i, v := range l.verts {
		l.rows[v.layer] = append(l.rows[v.layer], i)
	}
}

// down is edge i as laid out: from its upper box to its lower one.
func (l *layered) down(i int) (int, int) {
	e := l.g.edges[i]
	if l.reversed[i] {
		return e.to, e.from
	}
	return e.from, e.to
}

// order sorts each layer by the mean position of its neighbours in the
// layer above, then below, a few times over; a vertex without neighbours
// there keeps its place.
func (l *layered) order() {
	pos := make([]float64, len(l.verts))
	renumber := func(row []int) {
		for k, v := range row {
			pos[v] = float64(k)
		}
	}
	for _, row := range l.rows {
		renumber(row)
	}
	sweep := func(row []int, neighbours [][]int) {
		key := make(map[int]float64, len(row))
		for _, v := range row {
			key[v] = pos[v]
			if ns := neighbours[v]; len(ns) > 0 {
				sum := 0.0
				for _, w := range ns {
					sum += pos[w]
				}
				key[v] = sum / float64(len(ns))
			}
		}
		slices.SortStableFunc(row, func(a, b int) int { return compareFloat(key[a], key[b]) })
		renumber(row)
	}
	for range 4 {
		for k := 1; k < len(l.rows); k++ {
			sweep(l.rows[k], l.ups)
		}
		for k := len(l.rows) - 2; k >= 0; k-- {
			sweep(l.rows[k], l.downs)
		}
	}
}

// width is a vertex's width: its box's, or a bend point's.
func (l *layered) width(v int) float64 {
	if b := l.verts[v].box; b >= 0 {
		return l.g.nodes[b].width
	}
	return dummyWidth
}

// place gives every vertex its coordinates, layers top-down, each centred
// on the widest, and returns the picture's size.
func (l *layered) place() (width, height float64) {
	layers := len(l.rows)
	rowWidth := make([]float64, layers)
	l.height = make([]float64, layers)
	widest := 0.0
	for k, row := range l.rows {
		for j, v := range row {
			if j > 0 {
				rowWidth[k] += nodeGap
			}
			rowWidth[k] += l.width(v)
			if b := l.verts[v].box; b >= 0 {
				l.height[k] = max(l.height[k], l.g.nodes[b].height)
			}
		}
		widest = max(widest, rowWidth[k])
	}
	l.center = make([]point, len(l.verts))
	l.top = make([]float64, layers)
	y := float64(margin)
	for k, row := range l.rows {
		l.top[k] = y
		x := margin + (widest-rowWidth[k])/2
		for _, v := range row {
			l.center[v] = point{x + l.width(v)/2, y}
			x += l.width(v) + nodeGap
		}
		y += l.height[k] + layerGap
	}
	return widest + 2*margin, y - layerGap + margin
}

// routes runs each edge down its chain of vertices, from a port on the
// bottom of its upper box to one on the top of its lower box, its label in
// the gap below the upper box; a reversed edge's route is then turned
// around, so every route goes from the edge's source to its target.
func (l *layered) routes() ([][]point, []edgeLabel) {
	outPort := l.ports(func(c []int) (int, int) { return c[0], c[1] })
	inPort := l.ports(func(c []int) (int, int) { return c[len(c)-1], c[len(c)-2] })
	var routes [][]point
	var labels []edgeLabel
	for i, chain := range l.chains {
		var pts []point
		for k, v := range chain {
			layer := l.verts[v].layer
			switch {
			case k == 0: // bottom of the upper box
				pts = append(pts, point{outPort[i], l.top[layer] + l.g.nodes[v].height})
			case k == len(chain)-1: // top of the lower box
				pts = append(pts, point{inPort[i], l.top[layer]})
			default: // through the crossed layer
				pts = append(pts, point{l.center[v].x, l.top[layer]}, point{l.center[v].x, l.top[layer] + l.height[layer]})
			}
		}
		mid := point{(pts[0].x + pts[1].x) / 2, (pts[0].y + pts[1].y) / 2}
		if l.reversed[i] {
			slices.Reverse(pts)
		}
		routes = append(routes, pts)
		labels = append(labels, edgeLabel{at: mid, text: strings.Join(l.g.edges[i].relations, ", ")})
	}
	return routes, labels
}

// ports spreads the edges that end at a box over its width, ordered by
// where their next vertex is, so arrows neither start nor end on one
// point. end names an edge chain's vertex at the box and the one next to
// it; the answer is each edge's port x.
func (l *layered) ports(end func(chain []int) (box, next int)) []float64 {
	byBox := make([][]int, len(l.g.nodes))
	for i, chain := range l.chains {
		b, _ := end(chain)
		byBox[b] = append(byBox[b], i)
	}
	port := make([]float64, len(l.chains))
	for b, edges := range byBox {
		slices.SortStableFunc(edges, func(x, y int) int {
			_, nx := end(l.chains[x])
			_, ny := end(l.chains[y])
			return compareFloat(l.center[nx].x, l.center[ny].x)
		})
		w := l.width(b)
		for j, i := range edges {
			port[i] = l.center[b].x - w/2 + w*float64(j+1)/float64(len(edges)+1)
		}
	}
	return port
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fitLabels widens the picture, and moves it right, so that every edge
// label is inside it with a margin.
func (c *chainLayout) fitLabels() {
	left, right := float64(margin), c.width-margin
	for _, lb := range c.labels {
		x0, x1 := lb.extent()
		left, right = min(left, x0), max(right, x1)
	}
	dx := margin - left
	for i := range c.pos {
		c.pos[i].x += dx
	}
	for _, pts := range c.route {
		for k := range pts {
			pts[k].x += dx
		}
	}
	for i := range c.labels {
		c.labels[i].at.x += dx
	}
	c.width = right + dx + margin
}

// backEdges finds, by depth-first search from each box in input order, the
// edges that close a cycle; drawing them upwards leaves a DAG to layer.
func backEdges(g *graph, out [][]int) []bool {
	const (
		unseen = iota
		open
		done
	)
	state := make([]int, len(g.nodes))
	back := make([]bool, len(g.edges))
	var visit func(v int)
	visit = func(v int) {
		state[v] = open
		for _, i := range out[v] {
			switch w := g.edges[i].to; state[w] {
			case open:
				back[i] = true
			case unseen:
				visit(w)
			}
		}
		state[v] = done
	}
	for v := range g.nodes {
		if state[v] == unseen {
			visit(v)
		}
	}
	return back
}

// topoOrder orders n boxes so every edge's upper box (as down gives it)
// comes before its lower one, ties in input order.
func topoOrder(n, edges int, down func(int) (int, int)) []int {
	indegree := make([]int, n)
	succ := make([][]int, n)
	for i := range edges {
		u, v := down(i)
		indegree[v]++
		succ[u] = append(succ[u], v)
	}
	var order, ready []int
	for v := range n {
		if indegree[v] == 0 {
			ready = append(ready, v)
		}
	}
	for len(ready) > 0 {
		slices.Sort(ready)
		v := ready[0]
		ready = ready[1:]
		order = append(order, v)
		for _, w := range succ[v] {
			if indegree[w]--; indegree[w] == 0 {
				ready = append(ready, w)
			}
		}
	}
	return order
}
