package proposalstore

import (
	"errors"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// FindIdempotent returns the proposal that holds agent, run and idempotency
// key — the one Create would return instead of storing a new one — or nil
// when there is none yet. runID is the proposal's run id as stored
// ("run_<id>"). A Create of the same key still being written is not seen:
// callers that must tell a replay from a new proposal (IngestEpisode's
// duplicate flag) look first, then Create, which returns the existing one
// either way.
func (s *Store) FindIdempotent(agent, runID, key string) (*Record, error) {
	k := idemKey(&memoryv1.Proposal{AgentId: agent, RunId: runID, IdempotencyKey: key})
	if k == "" {
		return nil, nil
	}
	s.mu.Lock()
	var id string
	for _, e := range s.unindexed {
		if idemKey(e.rec.Proposal) == k {
			id = e.rec.Proposal.GetProposalId()
			break
		}
	}
	s.mu.Unlock()
	if id == "" {
		var err error
		if id, err = s.idx.idemID(k); err != nil || id == "" {
			return nil, err
		}
	}
	rec, err := s.Get(id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return rec, err
}
