package entitygraph

import "context"

// catchUp applies the commits up to main's head and records the outcome
// for readiness: until then the graph answers as of an older commit.
func (s *Service) catchUp(ctx context.Context) error {
	err := s.catchUpToHead(ctx)
	s.caughtUp.Observe(err)
	return err
}

// Ready is nil once the graph has caught up with main after start.
func (s *Service) Ready() error { return s.caughtUp.Ready() }
