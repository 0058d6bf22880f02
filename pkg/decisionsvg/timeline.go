package decisionsvg

import (
	"fmt"
	"slices"
	"strings"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/enumname"
)

// Sizes of the timeline, in pixels.
const (
	plotWidth     = 560
	rowHeight     = 22
	barHeight     = 12
	headerHeight  = 26
	axisHeight    = 22
	labelGap      = 12
	maxLabelRunes = 44
	maxTicks      = 8
)

// Timeline draws an entity's relations over time: one row per edge, a bar
// from the commit time the relation appeared (valid_from) to the one it
// disappeared (valid_to), or to now while it holds (those bars are classed
// "open"), on a shared time axis with a "now" line. Rows are ordered by
// valid_from, then by the other entity and the relation; each is labelled
// "→ relation other-id" for an edge from the entity and "← relation
// other-id" for one to it.
//
// entity is required; every edge must touch it and have a valid_from no
// later than its valid_to. An entity without edges gets a picture that says
// so.
func Timeline(entity *memoryv1.Entity, edges []*memoryv1.Edge, now time.Time) (string, error) {
	if entity == nil {
		return "", ErrNothingToDraw
	}
	id := entity.GetEntityId()
	rows, err := timelineRows(id, edges)
	if err != nil {
		return "", err
	}
	name := clean(entity.GetLabel())
	if name == "" {
		name = clean(id)
	}
	heading := name
	if t := entity.GetType(); t != memoryv1.EntityType_ENTITY_TYPE_UNSPECIFIED {
		heading += " (" + strings.ReplaceAll(enumname.Name(t), "_", " ") + ")"
	}

	var b svgBuilder
	if len(rows) == 0 {
		w := max(textWidth(heading)+2*margin, 280)
		b.open("gb-timeline", w, margin+headerHeight+lineHeight+margin, "Relations of "+name+" over time")
		b.text("title", margin, margin+fontSize, "", heading, fontSize)
		b.text("meta", margin, margin+headerHeight+fontSize, "", "No relations recorded.", smallSize)
		b.close()
		return b.String(), nil
	}

	labelW := 0.0
	for _, r := range rows {
		labelW = max(labelW, textWidth(r.label)*smallPerChar)
	}
	plotX := margin + labelW + labelGap
	width := plotX + plotWidth + margin
	plotTop := float64(margin + headerHeight)
	plotBottom := plotTop + float64(len(rows)*rowHeight)
	height := plotBottom + axisHeight + margin

	start, end := span(rows, now)
	// In seconds, not time.Duration: a Duration saturates past 292 years.
	x := func(t time.Time) float64 {
		return plotX + float64(t.Unix()-start.Unix())/float64(end.Unix()-start.Unix())*plotWidth
	}

	b.open("gb-timeline", width, height, "Relations of "+name+" over time")
	b.WriteString("<desc>" + esc(fmt.Sprintf("%d relations between %s and %s UTC.", len(rows),
		start.Format("2006-01-02 15:04"), end.Format("2006-01-02 15:04"))) + "</desc>\n")
	b.text("title", margin, margin+fontSize, "", heading, fontSize)

	// The axis: a baseline, ticks with their dates and a faint line up.
	b.WriteString(`<g class="axis">` + "\n")
	b.WriteString(`<line x1="` + px(plotX) + `" y1="` + px(plotBottom) + `" x2="` + px(plotX+plotWidth) + `" y2="` + px(plotBottom) +
		`" stroke="currentColor" stroke-opacity="0.6"/>` + "\n")
	for _, t := range ticks(start, end) {
		tx := x(t.at)
		b.WriteString(`<line class="tick" x1="` + px(tx) + `" y1="` + px(plotTop) + `" x2="` + px(tx) + `" y2="` + px(plotBottom+4) +
			`" stroke="currentColor" stroke-opacity="0.2"/>` + "\n")
		b.text("meta", tx, plotBottom+4+smallSize, "middle", t.label, smallSize)
	}
	b.WriteString("</g>\n")

	for i, r := range rows {
		y := plotTop + float64(i*rowHeight)
		b.WriteString(`<g class="` + r.class + `">` + "\n")
		b.WriteString("<title>" + esc(r.tooltip) + "</title>\n")
		b.text("label", margin+labelW, y+rowHeight/2+4, "end", r.label, smallSize)
		x0 := x(r.from)
		x1 := x(r.until(now, end))
		opacity := "0.45"
		if r.open {
			opacity = "0.85"
		}
		b.WriteString(`<rect x="` + px(x0) + `" y="` + px(y+(rowHeight-barHeight)/2) + `" width="` + px(max(x1-x0, 2)) + `" height="` +
			px(barHeight) + `" rx="3" fill="currentColor" fill-opacity="` + opacity + `"/>` + "\n")
		b.WriteString("</g>\n")
	}

	if !now.Before(start) && !now.After(end) {
		nx := x(now)
		b.WriteString(`<g class="now">` + "\n<title>now: " + esc(now.UTC().Format("2006-01-02 15:04")+" UTC") + "</title>\n")
		b.WriteString(`<line x1="` + px(nx) + `" y1="` + px(plotTop-6) + `" x2="` + px(nx) + `" y2="` + px(plotBottom) +
			`" stroke="currentColor" stroke-dasharray="3 3"/>` + "\n")
		b.text("meta", nx, plotTop-8, "middle", "now", smallSize)
		b.WriteString("</g>\n")
	}
	b.close()
	return b.String(), nil
}

// row is one relation of the timeline.
type row struct {
	from, to   time.Time // to is zero while the relation holds
	open       bool
	outgoing   bool
	other, rel string
	label      string
	tooltip    string
	class      string
}

// until is where the row's bar ends: its valid_to, or now while it holds
// (the axis's end if now is outside it).
func (r row) until(now, end time.Time) time.Time {
	switch {
	case !r.open:
		return r.to
	case now.Before(r.from) || now.After(end):
		return end
	}
	return now
}

func timelineRows(id string, edges []*memoryv1.Edge) ([]row, error) {
	var rows []row
	for i, e := range edges {
		if e == nil {
			return nil, fmt.Errorf("decisionsvg: edge %d is nil", i)
		}
		from, to := e.GetFromEntityId(), e.GetToEntityId()
		r := row{rel: strings.ReplaceAll(enumname.Name(e.GetRelation()), "_", " ")}
		switch id {
		case from:
			r.other, r.outgoing = to, true
		case to:
			r.other = from
		default:
			return nil, fmt.Errorf("decisionsvg: edge %d (%q → %q) does not touch entity %q", i, from, to, id)
		}
		if e.GetValidFrom() == nil {
			return nil, fmt.Errorf("decisionsvg: edge %d (%q → %q) has no valid_from", i, from, to)
		}
		r.from = e.GetValidFrom().AsTime().UTC()
		if e.GetValidTo() != nil {
			r.to = e.GetValidTo().AsTime().UTC()
			if r.to.Before(r.from) {
				return nil, fmt.Errorf("decisionsvg: edge %d (%q → %q) ends before it starts", i, from, to)
			}
		} else {
			r.open = true
		}
		arrow := "←"
		if r.outgoing {
			arrow = "→"
		}
		other := clean(r.other)
		r.label = truncate(arrow+" "+r.rel+" "+other, maxLabelRunes)
		span := r.from.Format("2006-01-02 15:04") + " – "
		if r.open {
			span += "now (holds)"
		} else {
			span += r.to.Format("2006-01-02 15:04")
		}
		r.tooltip = arrow + " " + r.rel + " " + other + ": " + span + " UTC"
		r.class = "bar rel-" + classPart(r.rel)
		if r.open {
			r.class += " open"
		} else {
			r.class += " closed"
		}
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		if c := a.from.Compare(b.from); c != 0 {
			return c
		}
		if c := strings.Compare(a.other, b.other); c != 0 {
			return c
		}
		return strings.Compare(a.rel, b.rel)
	})
	return rows, nil
}

// span is the axis: from the first valid_from to the last valid_to or now,
// with a little room on both sides; at least a day.
func span(rows []row, now time.Time) (time.Time, time.Time) {
	start, end := rows[0].from, rows[0].from
	anyOpen := false
	for _, r := range rows {
		start = minTime(start, r.from)
		end = maxTime(end, r.from)
		if r.open {
			anyOpen = true
		} else {
			end = maxTime(end, r.to)
		}
	}
	if anyOpen && now.After(end) {
		end = now.UTC()
	}
	if d := end.Sub(start); d < 24*time.Hour {
		start = start.Add(-(24*time.Hour - d) / 2)
		end = start.Add(24 * time.Hour)
	}
	// In seconds: a time.Duration saturates past 292 years.
	pad := (end.Unix() - start.Unix()) / 40
	return time.Unix(start.Unix()-pad, 0).UTC(), time.Unix(end.Unix()+pad, 0).UTC()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// tick is a labelled point of the axis.
type tick struct {
	at    time.Time
	label string
}

// tickSteps are the axis's candidate steps, finest first: the first that
// leaves at most maxTicks ticks is used.
var tickSteps = []struct {
	step  func(time.Time) time.Time
	floor func(time.Time) time.Time
	// seconds is about how long a step is.
	seconds int64
	format  string
}{
	{hours(1), hourFloor(1), 3600, "Jan 2 15:04"},
	{hours(6), hourFloor(6), 6 * 3600, "Jan 2 15:04"},
	{days(1), day, daySeconds, "2006-01-02"},
	{days(7), monday, 7 * daySeconds, "2006-01-02"},
	{months(1), monthFloor(1), 30 * daySeconds, "Jan 2006"},
	{months(3), monthFloor(3), 91 * daySeconds, "Jan 2006"},
	{years(1), yearFloor(1), yearSeconds, "2006"},
	{years(5), yearFloor(5), 5 * yearSeconds, "2006"},
	{years(25), yearFloor(25), 25 * yearSeconds, "2006"},
	{years(100), yearFloor(100), 100 * yearSeconds, "2006"},
	{years(500), yearFloor(500), 500 * yearSeconds, "2006"},
	{years(2500), yearFloor(2500), 2500 * yearSeconds, "2006"},
}

const (
	daySeconds  = 24 * 3600
	yearSeconds = 365 * daySeconds
)

func hours(n int) func(time.Time) time.Time {
	return func(t time.Time) time.Time { return t.Add(time.Duration(n) * time.Hour) }
}
func hourFloor(n int) func(time.Time) time.Time {
	return func(t time.Time) time.Time { return t.Truncate(time.Duration(n) * time.Hour) }
}
func days(n int) func(time.Time) time.Time {
	return func(t time.Time) time.Time { return t.AddDate(0, 0, n) }
}
func day(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC) }
func monday(t time.Time) time.Time {
	d := day(t)
	return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
}
func months(n int) func(time.Time) time.Time {
	return func(t time.Time) time.Time { return t.AddDate(0, n, 0) }
}
func monthFloor(n int) func(time.Time) time.Time {
	return func(t time.Time) time.Time {
		return time.Date(t.Year(), t.Month()-(t.Month()-1)%time.Month(n), 1, 0, 0, 0, 0, time.UTC)
	}
}
func years(n int) func(time.Time) time.Time {
	return func(t time.Time) time.Time { return t.AddDate(n, 0, 0) }
}
func yearFloor(n int) func(time.Time) time.Time {
	return func(t time.Time) time.Time { return time.Date(t.Year()-t.Year()%n, 1, 1, 0, 0, 0, 0, time.UTC) }
}

// ticks are the axis's labelled points within start..end.
func ticks(start, end time.Time) []tick {
	s := tickSteps[len(tickSteps)-1]
	for _, c := range tickSteps {
		if (end.Unix()-start.Unix())/c.seconds <= maxTicks {
			s = c
			break
		}
	}
	var out []tick
	for t := s.floor(start); !t.After(end) && len(out) < 4*maxTicks; t = s.step(t) {
		if !t.Before(start) {
			out = append(out, tick{at: t, label: t.Format(s.format)})
		}
	}
	return out
}
