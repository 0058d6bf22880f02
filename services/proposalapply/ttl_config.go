package proposalapply

import (
	"errors"
	"flag"
	"time"
)

// TTLConfig configures the fact TTL scheduler (ttl_scheduler.go).
type TTLConfig struct {
	// Interval is how often expired facts' actions are proposed; 0 turns
	// the scheduler off (expired facts are still reported).
	Interval time.Duration
}

// RegisterFlags adds the scheduler's flags.
func (c *TTLConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Interval, "ttl-interval", time.Minute,
		"proposal-apply: how often facts whose TTL ran out get their expiry action (mark_stale, archive, delete), one commit per agent (0 = never; GetStaleFacts still reports them)")
}

// Validate checks the flags.
func (c *TTLConfig) Validate() error {
	if c.Interval < 0 {
		return errors.New("--ttl-interval must not be negative")
	}
	if c.Interval > 0 && c.Interval < time.Second {
		return errors.New("--ttl-interval must be at least 1s (or 0 to turn the scheduler off)")
	}
	return nil
}
