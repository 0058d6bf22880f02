package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/garden-bloom/memory/pkg/mdops"
)

// agentMemoryCategories are the categories of our own agent-memory set, in
// the report's order (testdata/agentmem/README.md).
var agentMemoryCategories = []string{"single", "multi", "paraphrase", "temporal", "linked"}

// loadAgentMemory reads our own agent-memory retrieval set
// (cmd/membench/testdata/agentmem): agents/<agent>/sources/*.md are the
// agents' sources, agents/<agent>/facts.md their facts, decisions.md their
// decisions (Layer 2), questions.jsonl the
// questions with the exact lines (evidence) an answer needs.
func loadAgentMemory(dir string) (*retrievalSet, error) {
	// Its sources are short (about 3,500 tokens an agent): at 4K everything
	// fits, so the budgets are smaller than LoCoMo's.
	set := &retrievalSet{name: "agent memory", categories: agentMemoryCategories, budgets: []int{600, 1000, 1500, 2000}}
	agentDirs, err := os.ReadDir(filepath.Join(dir, "agents"))
	if err != nil {
		return nil, err
	}
	for _, d := range agentDirs {
		a := retrievalAgent{id: d.Name(), sources: map[string]string{}}
		if facts, err := os.ReadFile(filepath.Join(dir, "agents", a.id, "facts.md")); err == nil {
			a.facts = string(facts)
		}
		if decisions, err := os.ReadFile(filepath.Join(dir, "agents", a.id, "decisions.md")); err == nil {
			a.decisions = mdops.ParseDecisions(string(decisions))
		}
		docs, err := filepath.Glob(filepath.Join(dir, "agents", a.id, "sources", "*.md"))
		if err != nil {
			return nil, err
		}
		for _, p := range docs {
			text, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			a.sources[filepath.Base(p)] = string(text)
		}
		set.agents = append(set.agents, a)
	}
	f, err := os.Open(filepath.Join(dir, "questions.jsonl"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var q struct {
			Agent    string   `json:"agent"`
			Question string   `json:"question"`
			Evidence []string `json:"evidence"`
			Category string   `json:"category"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("questions.jsonl:%d: %w", n, err)
		}
		if !slices.ContainsFunc(set.agents, func(a retrievalAgent) bool { return a.id == q.Agent }) ||
			!slices.Contains(agentMemoryCategories, q.Category) || len(q.Evidence) == 0 {
			return nil, fmt.Errorf("questions.jsonl:%d: unknown agent or category, or no evidence", n)
		}
		set.questions = append(set.questions, retrievalQuestion{agent: q.Agent, text: q.Question, category: q.Category, evidence: q.Evidence})
	}
	return set, sc.Err()
}
