// Package progress draws one self-rewriting status line for long work
// (counts, rate, ETA) on a terminal, and nothing elsewhere: logs and CI
// output get only the caller's final summary.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Bar is a progress line. Its methods are safe for concurrent use.
type Bar struct {
	mu       sync.Mutex
	w        io.Writer
	live     bool
	label    string
	total    int
	counts   map[string]int
	order    []string
	start    time.Time
	now      func() time.Time
	lastDraw time.Time
	width    int
}

// New returns a bar for total items; live=false makes it silent (not a
// terminal). now is the clock (time.Now outside tests).
func New(w io.Writer, live bool, label string, total int, now func() time.Time) *Bar {
	return &Bar{w: w, live: live, label: label, total: total, counts: map[string]int{}, start: now(), now: now}
}

// Add counts n items under key ("sent", "applied", "failed", …); the first
// key given is the one the rate and ETA follow.
func (b *Bar) Add(key string, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.counts[key]; !ok {
		b.order = append(b.order, key)
	}
	b.counts[key] += n
	if t := b.now(); t.Sub(b.lastDraw) >= 100*time.Millisecond || b.counts[b.order[0]] == b.total {
		b.lastDraw = t
		b.draw(t)
	}
}

// Line is the status line as it would be drawn now.
func (b *Bar) Line() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.line(b.now())
}

func (b *Bar) line(t time.Time) string {
	done := 0
	if len(b.order) > 0 {
		done = b.counts[b.order[0]]
	}
	elapsed := t.Sub(b.start)
	var parts []string
	for _, k := range b.order {
		parts = append(parts, fmt.Sprintf("%d %s", b.counts[k], k))
	}
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed.Seconds()
	}
	eta := "?"
	if rate > 0 && done < b.total {
		eta = (time.Duration(float64(b.total-done) / rate * float64(time.Second))).Round(time.Second).String()
	} else if done >= b.total {
		eta = "0s"
	}
	pct := 0
	if b.total > 0 {
		pct = done * 100 / b.total
	}
	const cells = 20
	filled := min(cells, pct*cells/100)
	return fmt.Sprintf("%s [%s%s] %d/%d %3d%% | %s | %.1f/s | ETA %s", b.label,
		strings.Repeat("=", filled), strings.Repeat(" ", cells-filled), done, b.total, pct,
		strings.Join(parts, ", "), rate, eta)
}

func (b *Bar) draw(t time.Time) {
	if !b.live {
		return
	}
	s := b.line(t)
	pad := max(0, b.width-len(s))
	b.width = len(s)
	_, _ = fmt.Fprintf(b.w, "\r%s%s", s, strings.Repeat(" ", pad))
}

// Done ends the line on a terminal (a newline after the last draw).
func (b *Bar) Done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.live {
		return
	}
	b.draw(b.now())
	_, _ = fmt.Fprintln(b.w)
}
