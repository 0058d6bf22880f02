//go:build race

package temporalgraph

// raceEnabled: the race detector slows the graph ten times; the largest
// tests shrink under it.
const raceEnabled = true
