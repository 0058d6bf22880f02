package memdiff

// This file is the line-diff engine behind Unified. It follows the steps
// git's default diff takes, so that the hunks match `git diff` line for
// line rather than merely being some minimal diff:
//
//  1. lines common to both ends of the files are set aside;
//  2. lines that occur nowhere in the other file are marked changed up
//     front, and so are very frequent lines (blank lines, "---") that sit
//     inside a run of such unmatched lines, so a rewritten block is shown
//     as one block instead of being stitched to stray blank lines;
//  3. Myers' O(ND) algorithm in its linear-space, divide-and-conquer form
//     (middle snake) aligns what is left, with git's tie-breaking;
//  4. each run of changed lines that could equally be placed higher or
//     lower ("slider") is moved to where git would put it: next to a change
//     in the other file if possible, otherwise where the indent heuristic
//     scores best (which, in Markdown, means cutting at blank lines).
//
// Like git, it gives up strict minimality on very expensive diffs (see
// heurMinCost), which keeps big rewrites fast and their output identical.

// diffFile is one side of the diff: every line as an equivalence class
// (equal lines share a class), the raw lines for the heuristics, and the
// "changed" mark of each line.
type diffFile struct {
	class []int
	lines []string
	// chg has a false sentinel on either side: chg[i+1] is line i, so the
	// group walks can look one line past either end without bounds checks.
	chg []bool
}

func (f *diffFile) n() int { return len(f.class) }

// changed reports the mark of line i; -1 and n() are the false sentinels.
func (f *diffFile) changed(i int) bool { return f.chg[i+1] }

func (f *diffFile) mark(i int, v bool) { f.chg[i+1] = v }

// lineDiff marks the changed lines of a and b (as returned by splitLines)
// and returns the two sides.
func lineDiff(a, b []string) (*diffFile, *diffFile) {
	classes := map[string]int{}
	classify := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			c, ok := classes[l]
			if !ok {
				c = len(classes)
				classes[l] = c
			}
			out[i] = c
		}
		return out
	}
	f1 := &diffFile{class: classify(a), lines: a, chg: make([]bool, len(a)+2)}
	f2 := &diffFile{class: classify(b), lines: b, chg: make([]bool, len(b)+2)}

	// Step 1: common prefix and suffix.
	lim := min(f1.n(), f2.n())
	start := 0
	for start < lim && f1.class[start] == f2.class[start] {
		start++
	}
	tail := 0
	for tail < lim-start && f1.class[f1.n()-1-tail] == f2.class[f2.n()-1-tail] {
		tail++
	}
	end1, end2 := f1.n()-tail, f2.n()-tail // exclusive

	// Step 2: discard lines that cannot or should not take part in the
	// alignment. Occurrence counts are over the whole files.
	count1 := make([]int, len(classes))
	count2 := make([]int, len(classes))
	for _, c := range f1.class {
		count1[c]++
	}
	for _, c := range f2.class {
		count2[c]++
	}
	idx1, cls1 := discard(f1, start, end1, count2)
	idx2, cls2 := discard(f2, start, end2, count1)

	// Step 3: Myers on what is left.
	// Diagonals k = x-y run from -len(cls2)-1 to len(cls1)+1 (one sentinel
	// either side), hence the offset and the size of fwd and bwd.
	diags := len(cls1) + len(cls2) + 3
	m := &myers{
		a: cls1, b: cls2, ia: idx1, ib: idx2, fa: f1, fb: f2,
		fwd: make([]int, diags), bwd: make([]int, diags), off: len(cls2) + 1,
		maxCost: max(bogoSqrt(diags), maxCostMin),
	}
	m.compare(0, len(cls1), 0, len(cls2), false)

	// Step 4: sliders, first in the old file against the new, then the
	// other way round, as git does.
	compact(f1, f2)
	compact(f2, f1)
	return f1, f2
}

// Tuning of the discard step, as in git: a line is frequent when it occurs
// at least about sqrt(n) times (at most maxEqLimit) in the other file; scan
// at most simScanWindow lines either side of a frequent line, and discard
// it when fewer than one in keepRatio of the lines around it are frequent
// lines too.
const (
	simScanWindow = 100
	keepRatio     = 4
	maxEqLimit    = 1024
)

// discard marks changed the lines of f[start:end] that have no counterpart
// in the other file, and those frequent lines that sit among them, and
// returns the indices and classes of the lines that remain for Myers.
func discard(f *diffFile, start, end int, otherCount []int) (idx, cls []int) {
	limit := min(bogoSqrt(f.n()), maxEqLimit)
	// kind: 0 = no match in the other file, 1 = ordinary, 2 = frequent.
	kind := make([]int, f.n())
	for i := start; i < end; i++ {
		switch nm := otherCount[f.class[i]]; {
		case nm == 0:
			kind[i] = 0
		case nm >= limit:
			kind[i] = 2
		default:
			kind[i] = 1
		}
	}
	for i := start; i < end; i++ {
		if kind[i] == 1 || (kind[i] == 2 && !amongUnmatched(kind, i, start, end-1)) {
			idx = append(idx, i)
			cls = append(cls, f.class[i])
		} else {
			f.mark(i, true)
		}
	}
	return idx, cls
}

// amongUnmatched decides whether the frequent line i should be discarded:
// only when it has unmatched lines on both sides, and frequent lines are a
// small minority of the run around it. Aligning such a line would only
// chop a rewritten block into pieces joined by, say, a blank line.
func amongUnmatched(kind []int, i, s, e int) bool {
	if i-s > simScanWindow {
		s = i - simScanWindow
	}
	if e-i > simScanWindow {
		e = i + simScanWindow
	}
	// Each run stops at the first line that matches (kind 1).
	unmatched, frequent := 0, 1
	for r := 1; i-r >= s && kind[i-r] != 1; r++ {
		if kind[i-r] == 0 {
			unmatched++
		} else {
			frequent++
		}
	}
	if unmatched == 0 {
		return false
	}
	unmatchedAfter, frequentAfter := 0, 1
	for r := 1; i+r <= e && kind[i+r] != 1; r++ {
		if kind[i+r] == 0 {
			unmatchedAfter++
		} else {
			frequentAfter++
		}
	}
	if unmatchedAfter == 0 {
		return false
	}
	unmatched += unmatchedAfter
	frequent += frequentAfter
	return frequent*keepRatio < frequent+unmatched
}

// bogoSqrt is git's cheap power-of-two approximation of sqrt(n), which
// decides when a line is "frequent"; matching it matters for fidelity.
func bogoSqrt(n int) int {
	i := 1
	for ; n > 0; n >>= 2 {
		i <<= 1
	}
	return i
}

// myers aligns a and b (classes of the kept lines; ia and ib map them back
// to line numbers of fa and fb).
type myers struct {
	a, b     []int
	ia, ib   []int
	fa, fb   *diffFile
	fwd, bwd []int // furthest reaching x per diagonal, indexed k+off
	off      int
	maxCost  int // edit cost at which split settles for the furthest point
}

// Git's limits for giving up minimality on expensive diffs: past
// heurMinCost edits, a snake of at least snakeCount lines that got far
// enough (kHeur times the cost) is taken as the split point; past maxCost
// (about the square root of the input, at least maxCostMin) the furthest
// reaching point is. They keep big rewrites fast; here they also decide
// which diff git shows for those, so they are reproduced.
const (
	heurMinCost = 256
	maxCostMin  = 256
	snakeCount  = 20
	kHeur       = 4
)

// splitPoint is where split cuts the box, and whether each half must be
// diffed minimally.
type splitPoint struct {
	i1, i2       int
	minLo, minHi bool
}

// compare marks the changes needed to turn a[off1:lim1] into b[off2:lim2].
// Unless needMin is set, a box whose edit cost grows too large may be split
// at a good-enough point instead of the optimal one (see split).
func (m *myers) compare(off1, lim1, off2, lim2 int, needMin bool) {
	for {
		for off1 < lim1 && off2 < lim2 && m.a[off1] == m.b[off2] {
			off1++
			off2++
		}
		for off1 < lim1 && off2 < lim2 && m.a[lim1-1] == m.b[lim2-1] {
			lim1--
			lim2--
		}
		switch {
		case off1 == lim1:
			for ; off2 < lim2; off2++ {
				m.fb.mark(m.ib[off2], true)
			}
			return
		case off2 == lim2:
			for ; off1 < lim1; off1++ {
				m.fa.mark(m.ia[off1], true)
			}
			return
		}
		sp := m.split(off1, lim1, off2, lim2, needMin)
		m.compare(off1, sp.i1, off2, sp.i2, sp.minLo)
		// The second half is handled by the loop rather than by recursion,
		// so long chains of splits do not deepen the stack.
		off1, off2, needMin = sp.i1, sp.i2, sp.minHi
	}
}

// split finds the middle snake of the box: the point where a forward and a
// backward search for the shortest edit script meet. Ties are broken as in
// git (forward prefers a deletion, backward an insertion), which decides
// which of several equally short scripts is shown. Without needMin, git's
// cut-offs for expensive boxes apply (see heurMinCost).
func (m *myers) split(off1, lim1, off2, lim2 int, needMin bool) splitPoint {
	fwd := func(k int) *int { return &m.fwd[k+m.off] }
	bwd := func(k int) *int { return &m.bwd[k+m.off] }
	dmin, dmax := off1-lim2, lim1-off2
	fmid, bmid := off1-off2, lim1-lim2
	odd := (fmid-bmid)&1 != 0
	fmin, fmax := fmid, fmid
	bmin, bmax := bmid, bmid
	*fwd(fmid) = off1
	*bwd(bmid) = lim1
	const far = int(^uint(0) >> 1)
	for cost := 1; ; cost++ {
		gotSnake := false
		// Widen the range of diagonals by one on each side, staying inside
		// the box; the value beyond the edge is a sentinel that never wins.
		if fmin > dmin {
			fmin--
			*fwd(fmin - 1) = -1
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			*fwd(fmax + 1) = -1
		} else {
			fmax--
		}
		for k := fmax; k >= fmin; k -= 2 {
			var i1 int
			if *fwd(k - 1) >= *fwd(k + 1) {
				i1 = *fwd(k - 1) + 1
			} else {
				i1 = *fwd(k + 1)
			}
			from := i1
			i2 := i1 - k
			for i1 < lim1 && i2 < lim2 && m.a[i1] == m.b[i2] {
				i1++
				i2++
			}
			if i1-from > snakeCount {
				gotSnake = true
			}
			*fwd(k) = i1
			if odd && bmin <= k && k <= bmax && *bwd(k) <= i1 {
				return splitPoint{i1, i2, true, true}
			}
		}

		if bmin > dmin {
			bmin--
			*bwd(bmin - 1) = far
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			*bwd(bmax + 1) = far
		} else {
			bmax--
		}
		for k := bmax; k >= bmin; k -= 2 {
			var i1 int
			if *bwd(k - 1) < *bwd(k + 1) {
				i1 = *bwd(k - 1)
			} else {
				i1 = *bwd(k + 1) - 1
			}
			from := i1
			i2 := i1 - k
			for i1 > off1 && i2 > off2 && m.a[i1-1] == m.b[i2-1] {
				i1--
				i2--
			}
			if from-i1 > snakeCount {
				gotSnake = true
			}
			*bwd(k) = i1
			if !odd && fmin <= k && k <= fmax && i1 <= *fwd(k) {
				return splitPoint{i1, i2, true, true}
			}
		}

		if needMin {
			continue
		}

		// Expensive box and a long snake seen: take a point that is far
		// along (measured from the corner, penalised by the distance from
		// the middle diagonal) and ends a snake of snakeCount lines.
		if gotSnake && cost > heurMinCost {
			best, sp := 0, splitPoint{minLo: true}
			for k := fmax; k >= fmin; k -= 2 {
				i1 := *fwd(k)
				i2 := i1 - k
				v := (i1 - off1) + (i2 - off2) - abs(k-fmid)
				if v > kHeur*cost && v > best &&
					off1+snakeCount <= i1 && i1 < lim1 && off2+snakeCount <= i2 && i2 < lim2 &&
					snakeBefore(m.a, m.b, i1, i2) {
					best, sp.i1, sp.i2 = v, i1, i2
				}
			}
			if best > 0 {
				return sp
			}
			best, sp = 0, splitPoint{minHi: true}
			for k := bmax; k >= bmin; k -= 2 {
				i1 := *bwd(k)
				i2 := i1 - k
				v := (lim1 - i1) + (lim2 - i2) - abs(k-bmid)
				if v > kHeur*cost && v > best &&
					off1 < i1 && i1 <= lim1-snakeCount && off2 < i2 && i2 <= lim2-snakeCount &&
					snakeAfter(m.a, m.b, i1, i2) {
					best, sp.i1, sp.i2 = v, i1, i2
				}
			}
			if best > 0 {
				return sp
			}
		}

		// Too expensive: settle for the furthest reaching point of either
		// search, measured by i1+i2.
		if cost >= m.maxCost {
			fbest, fbest1 := -1, -1
			for k := fmax; k >= fmin; k -= 2 {
				i1 := min(*fwd(k), lim1)
				i2 := i1 - k
				if lim2 < i2 {
					i1, i2 = lim2+k, lim2
				}
				if fbest < i1+i2 {
					fbest, fbest1 = i1+i2, i1
				}
			}
			bbest, bbest1 := far, far
			for k := bmax; k >= bmin; k -= 2 {
				i1 := max(off1, *bwd(k))
				i2 := i1 - k
				if i2 < off2 {
					i1, i2 = off2+k, off2
				}
				if i1+i2 < bbest {
					bbest, bbest1 = i1+i2, i1
				}
			}
			if (lim1+lim2)-bbest < fbest-(off1+off2) {
				return splitPoint{i1: fbest1, i2: fbest - fbest1, minLo: true}
			}
			return splitPoint{i1: bbest1, i2: bbest - bbest1, minHi: true}
		}
	}
}

// snakeBefore reports whether the snakeCount lines before (i1, i2) match.
func snakeBefore(a, b []int, i1, i2 int) bool {
	for k := 1; k <= snakeCount; k++ {
		if a[i1-k] != b[i2-k] {
			return false
		}
	}
	return true
}

// snakeAfter reports whether the snakeCount lines from (i1, i2) match.
func snakeAfter(a, b []int, i1, i2 int) bool {
	for k := 0; k < snakeCount; k++ {
		if a[i1+k] != b[i2+k] {
			return false
		}
	}
	return true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// group is a maximal run [start, end) of changed lines (possibly empty:
// start == end marks the place between two unchanged lines).
type group struct{ start, end int }

func firstGroup(f *diffFile) group {
	g := group{}
	for f.changed(g.end) {
		g.end++
	}
	return g
}

// next moves g to the following group; false at the end of the file.
func (g *group) next(f *diffFile) bool {
	if g.end == f.n() {
		return false
	}
	g.start = g.end + 1
	g.end = g.start
	for f.changed(g.end) {
		g.end++
	}
	return true
}

// prev moves g to the preceding group; false at the start of the file.
func (g *group) prev(f *diffFile) bool {
	if g.start == 0 {
		return false
	}
	g.end = g.start - 1
	g.start = g.end
	for f.changed(g.start - 1) {
		g.start--
	}
	return true
}

// slideDown moves the group one line down if the line after it equals its
// first line (the diff stays valid), merging with a group it then touches.
func (g *group) slideDown(f *diffFile) bool {
	if g.end >= f.n() || f.class[g.start] != f.class[g.end] {
		return false
	}
	f.mark(g.start, false)
	f.mark(g.end, true)
	g.start++
	g.end++
	for f.changed(g.end) {
		g.end++
	}
	return true
}

// slideUp is slideDown in the other direction.
func (g *group) slideUp(f *diffFile) bool {
	if g.start == 0 || f.class[g.start-1] != f.class[g.end-1] {
		return false
	}
	g.start--
	g.end--
	f.mark(g.start, true)
	f.mark(g.end, false)
	for f.changed(g.start - 1) {
		g.start--
	}
	return true
}

// maxSliding bounds how many positions the indent heuristic considers.
const maxSliding = 100

// compact moves every slider of f to git's preferred position; o is the
// other file, whose groups are walked in step (between two groups of f,
// unchanged lines pair up one to one with those of o).
func compact(f, o *diffFile) {
	g, go_ := firstGroup(f), firstGroup(o)
	for {
		if g.end != g.start {
			var size, earliestEnd, endMatchingOther int
			for {
				size = g.end - g.start
				endMatchingOther = -1
				// Slide up as far as possible, then down as far as possible,
				// remembering the lowest position where the group lines up
				// with a change in the other file. Sliding may merge groups,
				// in which case start over with the bigger group.
				for g.slideUp(f) {
					go_.prev(o)
				}
				earliestEnd = g.end
				if go_.end > go_.start {
					endMatchingOther = g.end
				}
				for g.slideDown(f) {
					go_.next(o)
					if go_.end > go_.start {
						endMatchingOther = g.end
					}
				}
				if size == g.end-g.start {
					break
				}
			}
			switch {
			case g.end == earliestEnd:
				// Not a slider.
			case endMatchingOther != -1:
				// Pair the deletion with the insertion in the other file so
				// the reader sees one replaced block, not two.
				for go_.end == go_.start {
					g.slideUp(f)
					go_.prev(o)
				}
			default:
				best, bestScore := -1, splitScore{}
				shift := max(earliestEnd, g.end-size-1, g.end-maxSliding)
				for ; shift <= g.end; shift++ {
					var s splitScore
					s.add(measureSplit(f, shift))
					s.add(measureSplit(f, shift-size))
					if best == -1 || s.cmp(bestScore) <= 0 {
						best, bestScore = shift, s
					}
				}
				for g.end > best {
					g.slideUp(f)
					go_.prev(o)
				}
			}
		}
		if !g.next(f) {
			return
		}
		go_.next(o)
	}
}

// Indent heuristic weights. These are git's, tuned by its authors on a
// corpus of real diffs; the same numbers are needed for the same output.
const (
	maxIndent                  = 200
	maxBlanks                  = 20
	startOfFilePenalty         = 1
	endOfFilePenalty           = 21
	totalBlankWeight           = -30
	postBlankWeight            = 6
	relativeIndentPenalty      = -4
	relativeIndentBlankPenalty = 10
	relativeOutdentPenalty     = 24
	relativeOutdentBlank       = 17
	relativeDedentPenalty      = 23
	relativeDedentBlank        = 17
	indentWeight               = 60
)

// splitMeasure describes the surroundings of a cut before line split.
type splitMeasure struct {
	eof                   bool
	indent                int // of the line at the cut, -1 if blank or EOF
	preBlank, preIndent   int // blank lines above, indent of the first non-blank one
	postBlank, postIndent int
}

// lineIndent is the visual indent of l (tabs to multiples of 8), or -1 for
// a blank line.
func lineIndent(l string) int {
	n := 0
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case ' ':
			n++
		case '\t':
			n += 8 - n%8
		case '\n', '\r':
		default:
			return n
		}
		if n >= maxIndent {
			return maxIndent
		}
	}
	return -1
}

func measureSplit(f *diffFile, split int) splitMeasure {
	m := splitMeasure{indent: -1, preIndent: -1, postIndent: -1}
	if split >= f.n() {
		m.eof = true
	} else {
		m.indent = lineIndent(f.lines[split])
	}
	for i := split - 1; i >= 0; i-- {
		if ind := lineIndent(f.lines[i]); ind != -1 {
			m.preIndent = ind
			break
		}
		m.preBlank++
		if m.preBlank == maxBlanks {
			m.preIndent = 0
			break
		}
	}
	for i := split + 1; i < f.n(); i++ {
		if ind := lineIndent(f.lines[i]); ind != -1 {
			m.postIndent = ind
			break
		}
		m.postBlank++
		if m.postBlank == maxBlanks {
			m.postIndent = 0
			break
		}
	}
	return m
}

// splitScore rates a slider position; lower is better.
type splitScore struct{ effectiveIndent, penalty int }

func (s *splitScore) add(m splitMeasure) {
	if m.preIndent == -1 && m.preBlank == 0 {
		s.penalty += startOfFilePenalty
	}
	if m.eof {
		s.penalty += endOfFilePenalty
	}
	postBlank := 0
	if m.indent == -1 {
		postBlank = 1 + m.postBlank
	}
	totalBlank := m.preBlank + postBlank
	s.penalty += totalBlankWeight*totalBlank + postBlankWeight*postBlank
	indent := m.indent
	if indent == -1 {
		indent = m.postIndent
	}
	anyBlanks := totalBlank != 0
	s.effectiveIndent += indent
	switch {
	case indent == -1, m.preIndent == -1, indent == m.preIndent:
	case indent > m.preIndent:
		s.penalty += pick(anyBlanks, relativeIndentBlankPenalty, relativeIndentPenalty)
	case m.postIndent != -1 && m.postIndent > indent:
		s.penalty += pick(anyBlanks, relativeOutdentBlank, relativeOutdentPenalty)
	default:
		s.penalty += pick(anyBlanks, relativeDedentBlank, relativeDedentPenalty)
	}
}

func (s splitScore) cmp(t splitScore) int {
	c := 0
	if s.effectiveIndent > t.effectiveIndent {
		c = 1
	} else if s.effectiveIndent < t.effectiveIndent {
		c = -1
	}
	return indentWeight*c + s.penalty - t.penalty
}

func pick(cond bool, a, b int) int {
	if cond {
		return a
	}
	return b
}
