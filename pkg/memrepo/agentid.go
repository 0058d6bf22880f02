package memrepo

import (
	"errors"
	"fmt"
	"regexp"
)

// AgentIDPattern is the slug syntax every agent id must match. Agent ids
// become path segments (memory/<agentId>/, logic/<agentId>/) and parts of
// commit messages, so the alphabet is deliberately tiny: no dots (no "..",
// no hidden files), no slashes, no upper case (case-insensitive filesystems
// and URLs would otherwise alias two agents).
const AgentIDPattern = `^[a-z0-9][a-z0-9-]{0,63}$`

// agentIDRe is compiled once; regexp.Regexp is safe for concurrent use.
var agentIDRe = regexp.MustCompile(AgentIDPattern)

// ErrInvalidAgentID reports an agent id that does not match AgentIDPattern.
// Callers should test for it with errors.Is.
var ErrInvalidAgentID = errors.New("memrepo: invalid agent id")

// ValidAgentID reports whether id matches AgentIDPattern.
func ValidAgentID(id string) bool {
	return agentIDRe.MatchString(id)
}

// CheckAgentID returns nil if id is valid and otherwise an error wrapping
// ErrInvalidAgentID that names the offending id, which is what request
// handlers usually want to return.
func CheckAgentID(id string) error {
	if ValidAgentID(id) {
		return nil
	}
	return fmt.Errorf("%w %q: must match %s", ErrInvalidAgentID, id, AgentIDPattern)
}
