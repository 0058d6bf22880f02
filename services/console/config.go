package console

import (
	"errors"
	"flag"
	"time"
)

// Config is the console's part of memoryd's configuration.
type Config struct {
	// Enabled serves the console at Path on the HTTP edge (--console).
	Enabled bool
	// Poll is how often an open page asks whether what it shows changed
	// (--console-poll).
	Poll time.Duration
}

// DefaultPoll is the default of --console-poll.
const DefaultPoll = 2 * time.Second

// RegisterFlags adds the console's flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.Enabled, "console", true, "console target (in all and read): serve the review console at /ui/ on --http-addr; --console=false turns it off")
	fs.DurationVar(&c.Poll, "console-poll", DefaultPoll, "how often an open console page (inbox, history, a proposal) asks whether what it shows changed, and refreshes it without a reload")
}

// Validate checks the flags.
func (c *Config) Validate() error {
	if c.Poll < 200*time.Millisecond || c.Poll > 10*time.Minute {
		return errors.New("--console-poll must be between 200ms and 10m")
	}
	return nil
}
