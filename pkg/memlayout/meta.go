package memlayout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// SchemaVersion of meta.json written by this code.
const SchemaVersion = "1.0"

// Meta is memory/<agentId>/meta.json (spec DiffMem §3.2), machine-readable
// facts about an agent's memory so readers need not parse Markdown.
type Meta struct {
	AgentID             string    `json:"agentId"`
	Version             int32     `json:"version"`
	LastUpdate          time.Time `json:"lastUpdate"`
	LastRunID           string    `json:"lastRunId,omitempty"`
	LastProposalID      string    `json:"lastProposalId,omitempty"`
	SnapshotTokenCount  int       `json:"snapshotTokenCount"`
	FactsTokenCount     int       `json:"factsTokenCount"`
	OpenLoopsTokenCount int       `json:"openLoopsTokenCount"`
	Layer1TokenCount    int       `json:"layer1TokenCount"`
	OpenLoopsCount      int       `json:"openLoopsCount"`
	DecisionsCount      int       `json:"decisionsCount"`
	SchemaVersion       string    `json:"schemaVersion"`
	TokenEncoding       string    `json:"tokenEncoding"`
	// Layer1SHA256 is the sha256 of snapshot.md, facts.md and open_loops.md,
	// so a reader can tell at a glance whether Layer 1 changed.
	Layer1SHA256 string `json:"layer1Sha256"`
}

// ParseMeta reads meta.json; empty input is the zero Meta (a new agent).
func ParseMeta(data []byte) (Meta, error) {
	var m Meta
	if len(bytes.TrimSpace(data)) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return Meta{}, fmt.Errorf("meta.json: %w", err)
	}
	return m, nil
}

// Encode renders meta.json deterministically (stable field order, UTC times).
func (m Meta) Encode() []byte {
	m.LastUpdate = m.LastUpdate.UTC()
	out, _ := json.MarshalIndent(m, "", "  ") // a struct of plain fields cannot fail
	return append(out, '\n')
}
