//go:build race

package invariants

// Under the race detector (make test) every step costs about five times as
// much; the short run stays well under a minute with fewer steps.
const raceEnabled = true
