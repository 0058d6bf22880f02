package memlayout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Policy is memory/<agentId>/policy.json: how an agent's proposals are
// reviewed. It lives in the monorepo, so changing it is itself a reviewed,
// audited commit — never auto-approved.
type Policy struct {
	// AutoApprove lets normal-priority, unflagged proposals apply without a person.
	AutoApprove bool `json:"autoApprove"`
	// Reviewers are the token subjects allowed to review; empty = any reviewer.
	Reviewers []string `json:"reviewers,omitempty"`
}

// ParsePolicy reads policy.json strictly: unknown fields are errors, so a
// typo like "autoAprove" cannot silently leave review on or off.
func ParsePolicy(data []byte) (Policy, error) {
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, fmt.Errorf("policy.json: %w", err)
	}
	if dec.More() {
		return Policy{}, fmt.Errorf("policy.json: trailing data")
	}
	return p, nil
}

// Encode renders policy.json deterministically.
func (p Policy) Encode() []byte {
	out, _ := json.MarshalIndent(p, "", "  ")
	return append(out, '\n')
}

// MayReview reports whether subject may review under this policy.
func (p Policy) MayReview(subject string) bool {
	return len(p.Reviewers) == 0 || slices.Contains(p.Reviewers, subject)
}
