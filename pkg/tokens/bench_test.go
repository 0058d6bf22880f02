package tokens

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/garden-bloom/memory/pkg/lru"
)

// factsDoc generates a facts.md-like ASCII document of about size bytes:
// headings, bullets with made-up names, numbers, dates, links, inline
// code, indented continuations and fenced blocks.
func factsDoc(seed uint64, size int) string {
	r := rand.New(rand.NewPCG(seed, 7))
	syl := []string{"bro", "ud", "rux", "chai", "loul", "tro", "tio", "quil", "wa", "dirt", "gi", "vert", "plo", "viox", "stou", "chain", "ze", "kli", "lan", "mio", "cho", "dra", "cond", "lek", "fi", "om"}
	// Like the entities of a real memory file, made-up names repeat.
	names := make([]string, 400)
	for i := range names {
		for range 2 + r.IntN(3) {
			names[i] += syl[r.IntN(len(syl))]
		}
	}
	name := func() string { return names[r.IntN(len(names))] }
	words := strings.Fields("the a of to and in is for on that with as by it from be are was this at or which not but can has have will must should when while before after each every cluster bucket replica index tenant policy snapshot release review backup latency stays under moves owns keeps publishes compacts waits agent memory note fact file write read commit token limit")
	var b strings.Builder
	fmt.Fprintf(&b, "# Facts: agent-%d\n\n", r.IntN(10000))
	for b.Len() < size {
		switch r.IntN(12) {
		case 0:
			fmt.Fprintf(&b, "\n## %s %s\n\n", strings.ToUpper(name()[:1])+name(), words[r.IntN(len(words))])
		case 1:
			fmt.Fprintf(&b, "  - see [%s](https://example.org/%s/%d) (updated 2026-%02d-%02d)\n", name(), name(), r.IntN(1000), 1+r.IntN(12), 1+r.IntN(28))
		case 2:
			fmt.Fprintf(&b, "```yaml\n%s:\n  replicas: %d\n  zone: \"%s-%d\"\n```\n", name(), r.IntN(9), name(), r.IntN(99))
		default:
			b.WriteString("- ")
			for i := range 6 + r.IntN(18) {
				if i > 0 {
					b.WriteByte(' ')
				}
				switch r.IntN(10) {
				case 0:
					fmt.Fprintf(&b, "`%s_%s`", name(), name())
				case 1:
					fmt.Fprintf(&b, "%d", r.IntN(100000))
				case 2, 3:
					b.WriteString(name())
				default:
					b.WriteString(words[r.IntN(len(words))])
				}
			}
			b.WriteString([]string{".\n", ";\n", "\n", " (it's the owner's call).\n"}[r.IntN(4)])
		}
	}
	return b.String()
}

// BenchmarkCountMarkdown counts 50 KB documents: cold (all caches emptied
// before each count), new-text (a long-lived counter meets a document it has
// not seen, as a server does on every write) and warm (the same document
// again, as on every read).
func BenchmarkCountMarkdown(b *testing.B) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		b.Fatal(err)
	}
	docs := []struct{ name, text string }{
		{"facts-ascii", factsDoc(1, 50<<10)},
		{"readme-mixed", string(readme)},
	}
	for _, d := range docs {
		b.Run(d.name+"/cold", func(b *testing.B) {
			c, err := New(DefaultEncoding)
			if err != nil {
				b.Fatal(err)
			}
			c.Count(d.text) // fault in the caches' memory, then empty them
			b.SetBytes(int64(len(d.text)))
			for b.Loop() {
				b.StopTimer()
				c.resetCaches()
				b.StartTimer()
				c.Count(d.text)
			}
		})
		b.Run(d.name+"/warm", func(b *testing.B) {
			c, err := New(DefaultEncoding)
			if err != nil {
				b.Fatal(err)
			}
			c.Count(d.text)
			b.SetBytes(int64(len(d.text)))
			for b.Loop() {
				c.Count(d.text)
			}
		})
	}
	b.Run("facts-ascii/new-text", func(b *testing.B) {
		c, err := New(DefaultEncoding)
		if err != nil {
			b.Fatal(err)
		}
		c.Count(factsDoc(1, 50<<10))
		seed := uint64(1)
		b.SetBytes(50 << 10)
		for b.Loop() {
			b.StopTimer()
			seed++
			text := factsDoc(seed, 50<<10)
			b.StartTimer()
			c.Count(text)
		}
	})
}

// resetCaches empties the counter's caches in place.
func (c *Counter) resetCaches() {
	c.pieces = lru.New[string, int](pieceCacheSize)
	if c.pretokens != nil {
		for i := range c.pretokens.slots {
			c.pretokens.slots[i].Store(nil)
			c.pretokens.tags[i].Store(0)
		}
	}
}
