package searchindex

import "context"

// catchUp indexes up to main's head and records the outcome for
// readiness: the index serves searches before, but a replica is not sent
// traffic until it answers with what main holds.
func (s *Service) catchUp(ctx context.Context) error {
	err := s.catchUpToHead(ctx)
	s.caughtUp.Observe(err)
	return err
}

// Ready is nil once the index has caught up with main after start.
func (s *Service) Ready() error { return s.caughtUp.Ready() }
