// Package invariants holds the model-based invariant tests of the memory
// service (issue #23, point 8). It has no code of its own: the tests start
// the real proposal-apply and context-assembly services over gRPC on
// loopback, on a real bare git repository and the local object store, feed
// them seeded random sequences of proposals under a test clock, and check
// after every commit that the memory the repository holds obeys the specs
// (DiffMem §3.2, §4, §11; memory-backend-integration §1–§2): Layer 1 hard
// limits, nothing silently lost, eviction of the oldest (stale first) facts
// only, loop retention rules, meta.json, bounded and deterministic reads,
// one commit per applied proposal and nothing changed by a refused one.
//
// The invariants are written from the specs' words, not from the
// implementation, so that they catch where the two part.
//
//	go test ./services/invariants                       # short run (make test)
//	INVARIANT_PROPOSALS=10000 go test ./services/invariants -run TestModel -v   # make invariants
//	INVARIANT_SEED=42 ...                               # replay a seed
package invariants
