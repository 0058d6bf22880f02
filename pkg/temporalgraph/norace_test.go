//go:build !race

package temporalgraph

const raceEnabled = false
