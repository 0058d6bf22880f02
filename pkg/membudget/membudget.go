// Package membudget gives the caches of a process one byte budget
// (memoryd's --memory-budget, issue #30): an operator sizes a process by
// one figure instead of a constant per cache, and the metrics
// (memory.cache.*) show how each cache uses its share.
//
// Each cache is made with the bound measured for it on its own (64 MiB of
// agent reads, 32 MiB of decoded trees …); those bounds are the weights:
// Split scales them all by one factor so that together they are the
// budget. A process has only the caches of the modules it runs, so a write
// plane's budget goes to git and token counts, a read plane's to reads.
package membudget

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/garden-bloom/memory/pkg/lru"
)

// Default is the budget of a process that does not set one: the caches
// of an all-in-one process at the bounds measured for them (about 300
// MiB) scaled to fit a 1 GB container beside the live state (entity
// graph, index segments, pending proposals) and the collector's headroom.
const Default = 256 << 20

// MinShare is the least a cache is given: below a MiB a cache of
// documents holds too few to be worth its lookups.
const MinShare = 1 << 20

// A Cache is bounded by approximate bytes and can be resized (lru.Cache).
type Cache interface {
	Stats() lru.Stats
	Resize(maxBytes int64)
}

// Named is a cache with the name its metrics carry (attribute cache of
// memory.cache.*, e.g. "git.trees").
type Named struct {
	Name  string
	Cache Cache
}

// Split resizes caches to share total bytes in proportion to their bounds
// now, each at least MinShare; it changes nothing when total cannot give
// every cache its floor.
func Split(total int64, caches []Named) error {
	if len(caches) == 0 {
		return nil
	}
	if need := int64(len(caches)) * MinShare; total < need {
		return fmt.Errorf("--memory-budget of %s is too small for %d caches: at least %s", FormatBytes(total), len(caches), FormatBytes(need))
	}
	weights := make([]int64, len(caches))
	var sum int64
	for i, c := range caches {
		weights[i] = max(c.Cache.Stats().MaxBytes, 1)
		sum += weights[i]
	}
	// Caches whose proportional share is below the floor get the floor;
	// the rest share what is left by weight (repeated, as taking floors
	// out lowers the others' shares).
	floored := make([]bool, len(caches))
	for {
		left, rest := total, int64(0)
		for i := range caches {
			if floored[i] {
				left -= MinShare
			} else {
				rest += weights[i]
			}
		}
		changed := false
		for i := range caches {
			if !floored[i] && share(left, weights[i], rest) < MinShare {
				floored[i], changed = true, true
			}
		}
		if changed {
			continue
		}
		for i, c := range caches {
			if floored[i] {
				c.Cache.Resize(MinShare)
			} else {
				c.Cache.Resize(share(left, weights[i], rest))
			}
		}
		return nil
	}
}

// share is left × weight / of, rounded down, without overflow.
func share(left, weight, of int64) int64 {
	if of == 0 {
		return 0
	}
	return int64(float64(left) * (float64(weight) / float64(of)))
}

// units are the suffixes ParseBytes knows, longest first.
var units = []struct {
	suffix string
	bytes  float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9},
	{"k", 1e3}, {"m", 1e6}, {"g", 1e9},
}

// ParseBytes reads a size: a whole number of bytes, or a number with a
// unit (KiB, MiB, GiB; KB/K, MB/M, GB/G), case-insensitive.
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	num := t
	for _, u := range units {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.bytes
			break
		}
	}
	if mult == 1 {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a size: a number of bytes, or with KiB, MiB or GiB", s)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f*mult > math.MaxInt64/2 || strings.ContainsAny(num, "xXpP") {
		return 0, fmt.Errorf("%q is not a size: a number of bytes, or with KiB, MiB or GiB", s)
	}
	return int64(f * mult), nil
}

// FormatBytes writes n in the largest binary unit it has a whole or half
// of ("256 MiB", "1.5 GiB"), else in bytes.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		name  string
		bytes int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.bytes && (2*n)%u.bytes == 0 {
			return strconv.FormatFloat(float64(n)/float64(u.bytes), 'f', -1, 64) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
