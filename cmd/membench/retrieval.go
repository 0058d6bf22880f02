package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/garden-bloom/memory/cmd/memoryd/app"
	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/telemetry"
	"github.com/garden-bloom/memory/services/searchindex"
)

// A retrieval set is agents' memory and questions whose evidence must be in
// the context AssembleContext gives for the question: LoCoMo's
// conversations (evidence: a turn's [D1:3] tag) or our own agent-memory
// set (evidence: a line's words). Both are measured the same way, through
// the product as a caller uses it: memoryd's defaults, the REST edge,
// AssembleContext with only the hint and the budget set.
type retrievalSet struct {
	name   string
	agents []retrievalAgent
	// questions in the order they are asked.
	questions []retrievalQuestion
	// categories in the report's order.
	categories []string
	budgets    []int
	// reference is a comparison figure by budget (LoCoMo: Lucene); nil: none.
	reference     map[int]float64
	referenceName string
}

type retrievalAgent struct {
	id string
	// sources are object-store documents by name (agents/<id>/sources/<name>).
	sources map[string]string
	// facts is the agent's facts.md ("" : none).
	facts string
	// decisions go into decisions.md (Layer 2), one add_decision each.
	decisions []mdops.Decision
}

type retrievalQuestion struct {
	agent, text, category string
	// evidence are strings each of which must appear in the context.
	evidence []string
}

// retrievalConfig is one memoryd configuration measured: the defaults, or
// the defaults with one component switched (the ablation).
type retrievalConfig struct {
	name  string
	flags []string
}

// retrievalConfigs are measured in this order; the first is the defaults.
var retrievalConfigs = []retrievalConfig{
	{name: "defaults"},
	{name: "hits without neighbours", flags: []string{"--context-neighbors=0"}},
	{name: "one neighbour each side", flags: []string{"--context-neighbors=1"}},
	{name: "sources whole first", flags: []string{"--context-whole-by-share=false"}},
	{name: "diversity 0.8", flags: []string{"--context-diversity=0.8"}},
	{name: "top_k 20 at every budget", flags: []string{"--context-topk-tokens=0"}},
	{name: "query expansion (RM3) at every budget", flags: []string{"--context-expand=true"}},
	{name: "no expansion of budgets past 100 hits", flags: []string{"--context-expand-wide=false"}},
	{name: "no source prior", flags: []string{"--context-source-prior=false"}},
	{name: "question words kept", flags: []string{"--search-keep-question-words"}},
	{name: "graph-aware retrieval on", flags: []string{"--context-graph"}},
}

// recallTable is evidence recall by budget and category (per question).
type recallTable map[int]map[string][]float64

func (t recallTable) add(budget int, category string, r float64) {
	if t[budget] == nil {
		t[budget] = map[string][]float64{}
	}
	t[budget][category] = append(t[budget][category], r)
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return 100 * sum / float64(max(1, len(xs)))
}

func (t recallTable) overall(budget int) float64 {
	var all []float64
	for _, xs := range t[budget] {
		all = append(all, xs...)
	}
	return mean(all)
}

// memorydRun is an in-process memoryd on a data dir, with a service token.
type memorydRun struct {
	app   *app.App
	token string
	stop  func() error
}

func startMemoryd(ctx context.Context, dataDir string, flags []string) (*memorydRun, error) {
	args := append([]string{"--data-dir", dataDir, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--auto-approve-default", "--search-sources-poll", "200ms", "--rate-limit=0"}, flags...)
	cfg, fs, err := app.LoadConfig(args, func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	a, err := app.New(runCtx, cfg, fs, telemetry.NewLogger(io.Discard, 8))
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	signer, err := dataDirSigner(dataDir)
	if err != nil {
		cancel()
		return nil, errors.Join(err, <-done)
	}
	tok, err := signer.Mint("membench", []auth.Role{auth.RoleService}, []string{"*"}, 24*time.Hour)
	if err != nil {
		cancel()
		return nil, errors.Join(err, <-done)
	}
	// The logs go nowhere: a server that failed says so at stop.
	return &memorydRun{app: a, token: tok, stop: func() error { cancel(); return <-done }}, nil
}

// retrieval measures set under every configuration and writes the report.
func retrieval(ctx context.Context, set *retrievalSet, work string, ablation bool, out io.Writer) (err error) {
	dataDir := filepath.Join(work, set.name)
	start := time.Now()
	if err := seedRetrieval(ctx, set, dataDir); err != nil {
		return fmt.Errorf("%s: %w", set.name, err)
	}
	seeded := time.Since(start)
	configs := retrievalConfigs
	if !ablation {
		configs = configs[:1]
	}
	results := make([]recallTable, len(configs))
	took := make([]time.Duration, len(configs))
	for i, c := range configs {
		start := time.Now()
		if results[i], err = measureRetrieval(ctx, set, dataDir, c); err != nil {
			return fmt.Errorf("%s, %s: %w", set.name, c.name, err)
		}
		took[i] = time.Since(start)
	}
	_, err = io.WriteString(out, retrievalReport(set, configs, results, took, seeded))
	return err
}

// seedRetrieval writes the set's sources into the object store folder and
// its agents' memory through proposals, and waits until search has it all.
func seedRetrieval(ctx context.Context, set *retrievalSet, dataDir string) error {
	m, err := startMemoryd(ctx, dataDir, nil)
	if err != nil {
		return err
	}
	defer func() { _ = m.stop() }()
	blobs, err := blob.NewFS(filepath.Join(dataDir, "objects"))
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(m.app.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	call := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+m.token)
	pa := memoryv1.NewProposalApplyServiceClient(conn)
	for _, a := range set.agents {
		for name, text := range a.sources {
			if _, err := blob.PutBytes(ctx, blobs, "agents/"+a.id+"/sources/"+name, []byte(text), blob.PutOptions{}); err != nil {
				return err
			}
		}
		updates := []*memoryv1.FileUpdate{{File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE,
			Content: "# Snapshot: " + a.id + "\n\n## Role\nThe memory of " + a.id + ".\n"}}
		// facts.md takes appends: one per fact, into its section.
		section := ""
		for _, line := range strings.Split(a.facts, "\n") {
			if h, ok := strings.CutPrefix(line, "## "); ok {
				section = strings.TrimSpace(h)
			} else if strings.HasPrefix(line, "- ") && section != "" {
				updates = append(updates, &memoryv1.FileUpdate{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: section, Content: line})
			}
		}
		for _, d := range a.decisions {
			updates = append(updates, &memoryv1.FileUpdate{File: "decisions.md", Operation: memoryv1.Operation_OPERATION_ADD_DECISION,
				Decision: &memoryv1.Decision{Title: d.Title, Status: d.Status, Context: d.Context, Decision: d.Decision,
					Rationale: d.Rationale, Consequences: d.Consequences}})
		}
		if _, err := pa.Propose(call, &memoryv1.ProposeRequest{AgentId: a.id, RunId: "run_setup", Updates: updates}); err != nil {
			return err
		}
	}
	return waitIndexed(call, memoryv1.NewSearchIndexServiceClient(conn), set, memorydRepo(dataDir))
}

// waitIndexed waits until the index holds every source and every file of
// main's head it indexes (searchindex.Indexed: the timeline the engine
// writes too), once head has every agent's memory.
func waitIndexed(call context.Context, si memoryv1.SearchIndexServiceClient, set *retrievalSet, repoPath string) error {
	repo, err := memrepo.Open(repoPath)
	if err != nil {
		return err
	}
	sources := 0
	for _, a := range set.agents {
		sources += len(a.sources)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		files, snapshots, err := indexedAtHead(call, repo)
		if err != nil {
			return err
		}
		st, err := si.GetIndexStatus(call, &memoryv1.GetIndexStatusRequest{})
		if err != nil {
			return err
		}
		want := sources + files
		if snapshots == len(set.agents) && int(st.GetDocuments()) >= want && st.GetLagCommits() == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("indexing did not finish: %d of %d documents", st.GetDocuments(), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// memorydRepo is the repository of a memoryd run on dataDir.
func memorydRepo(dataDir string) string { return filepath.Join(dataDir, "memory.git") }

// indexedAtHead counts the files of main's head the index holds, and the
// agents' snapshots among them (an agent's memory is one commit).
func indexedAtHead(ctx context.Context, repo *memrepo.Repo) (files, snapshots int, err error) {
	head, err := repo.Head(ctx)
	if err != nil || head.IsZero() {
		return 0, 0, err
	}
	paths, err := repo.ListFiles(ctx, head, "memory/")
	if err != nil {
		return 0, 0, err
	}
	for _, p := range paths {
		if searchindex.Indexed(p) {
			files++
			if strings.HasSuffix(p, "/snapshot.md") {
				snapshots++
			}
		}
	}
	return files, snapshots, nil
}

// measureRetrieval asks every question at every budget of a memoryd run
// with c's flags, over REST, and scores evidence recall.
func measureRetrieval(ctx context.Context, set *retrievalSet, dataDir string, c retrievalConfig) (recallTable, error) {
	m, err := startMemoryd(ctx, dataDir, c.flags)
	if err != nil {
		return nil, err
	}
	defer func() { _ = m.stop() }()
	conn, err := grpc.NewClient(m.app.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	if err := waitIndexed(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+m.token),
		memoryv1.NewSearchIndexServiceClient(conn), set, memorydRepo(dataDir)); err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: time.Minute}
	// Every module caught up, the entity graph included.
	if err := waitHealthy(ctx, client, "http://"+m.app.HTTPAddr(), nil); err != nil {
		return nil, err
	}

	type job struct {
		q      retrievalQuestion
		budget int
	}
	jobs := make(chan job)
	var mu sync.Mutex
	table := recallTable{}
	var firstErr error
	var wg sync.WaitGroup
	base := "http://" + m.app.HTTPAddr() + "/memory/context?"
	for range 2 {
		wg.Go(func() {
			for j := range jobs {
				text, err := assembleREST(ctx, client, base, m.token, j.q, j.budget)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("%q at %d: %w", j.q.text, j.budget, err)
					}
				} else {
					found := 0
					for _, e := range j.q.evidence {
						if strings.Contains(text, e) {
							found++
						}
					}
					table.add(j.budget, j.q.category, float64(found)/float64(len(j.q.evidence)))
				}
				mu.Unlock()
			}
		})
	}
	for _, q := range set.questions {
		for _, b := range set.budgets {
			jobs <- job{q, b}
		}
	}
	close(jobs)
	wg.Wait()
	return table, firstErr
}

// assembleREST is GET /memory/context as a caller writes it: the agent,
// the question as the hint, the budget; every other parameter defaulted.
// It returns the sections' content.
func assembleREST(ctx context.Context, client *http.Client, base, token string, q retrievalQuestion, budget int) (string, error) {
	u := base + url.Values{"agent": {q.agent}, "queryHint": {q.text}, "budget": {strconv.Itoa(budget)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, body)
	}
	var doc struct {
		Sections []struct {
			Content string `json:"content"`
		} `json:"sections"`
		TotalTokens int `json:"totalTokens"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", err
	}
	if doc.TotalTokens > budget {
		return "", fmt.Errorf("%d tokens over a budget of %d", doc.TotalTokens, budget)
	}
	var all strings.Builder
	for _, s := range doc.Sections {
		all.WriteString(s.Content)
		all.WriteString("\n")
	}
	return all.String(), nil
}

// retrievalReport is the Markdown report of a set: the defaults by budget
// and category beside the reference, then what each configuration gives.
func retrievalReport(set *retrievalSet, configs []retrievalConfig, results []recallTable, took []time.Duration, seeded time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## %s: evidence recall of AssembleContext through REST, memoryd's defaults (%d agents, %d questions)\n\n",
		set.name, len(set.agents), len(set.questions))
	def := results[0]
	b.WriteString("| budget (tokens) | evidence recall |")
	if set.reference != nil {
		b.WriteString(" " + set.referenceName + " |")
	}
	for _, c := range set.categories {
		fmt.Fprintf(&b, " %s (%d) |", c, len(def[set.budgets[0]][c]))
	}
	b.WriteString("\n|---|---|")
	if set.reference != nil {
		b.WriteString("---|")
	}
	b.WriteString(strings.Repeat("---|", len(set.categories)) + "\n")
	for _, budget := range set.budgets {
		fmt.Fprintf(&b, "| %d | %.1f |", budget, def.overall(budget))
		if set.reference != nil {
			fmt.Fprintf(&b, " %.1f |", set.reference[budget])
		}
		for _, c := range set.categories {
			fmt.Fprintf(&b, " %.1f |", mean(def[budget][c]))
		}
		b.WriteString("\n")
	}
	if len(results) > 1 {
		b.WriteString("\nAblation: evidence recall with one component switched (difference to the defaults)\n\n| configuration |")
		for _, budget := range set.budgets {
			fmt.Fprintf(&b, " %d |", budget)
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(set.budgets)) + "\n")
		for i, c := range configs {
			name := c.name
			if len(c.flags) > 0 {
				name += " (`" + strings.Join(c.flags, " ") + "`)"
			}
			fmt.Fprintf(&b, "| %s |", name)
			for _, budget := range set.budgets {
				r := results[i].overall(budget)
				if i == 0 {
					fmt.Fprintf(&b, " %.1f |", r)
				} else {
					d := math.Round((r-def.overall(budget))*10) / 10
					if d == 0 {
						d = 0 // not "-0.0"
					}
					fmt.Fprintf(&b, " %.1f (%+.1f) |", r, d)
				}
			}
			b.WriteString("\n")
		}
	}
	var times []string
	for i, c := range configs {
		times = append(times, fmt.Sprintf("%s %s", c.name, took[i].Round(time.Second)))
	}
	sort.Strings(times[1:])
	fmt.Fprintf(&b, "\nseeded and indexed in %s; %d assemblies per configuration (%s)\n", seeded.Round(time.Second),
		len(set.questions)*len(set.budgets), strings.Join(times, ", "))
	return b.String()
}
