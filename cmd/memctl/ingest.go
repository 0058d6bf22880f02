package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/garden-bloom/memory/cmd/memctl/internal/episodefile"
	"github.com/garden-bloom/memory/cmd/memctl/internal/progress"
	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/episode"
)

type ingestOptions struct {
	agent       string
	wait        bool
	approve     bool
	autoApprove bool
	parallel    int
	waitTimeout time.Duration
	list        bool
}

func (c *cli) ingestCommand() *cobra.Command {
	o := &ingestOptions{}
	cmd := &cobra.Command{
		Use:   "ingest PATH...",
		Short: "Ingest episodes: each becomes one proposal (IngestEpisode)",
		Long: `Ingest episodes (spec AI Skills Memory Protocol §4, §8.4): each episode becomes
one proposal — a run file with its typed entity links, its facts and decisions —
applied as one commit. Re-ingesting the same episode returns the same proposal.

PATH is a JSON or YAML file with one episode (or a list, or several YAML
documents), a .jsonl file with one episode a line, a folder of such files, or
"-" for stdin. A document is an Episode (docs/episodes.md; the spec's snake_case
field names) or {"agent_id": "...", "episode": {...}} to name its agent.
Unknown fields are an error naming the file and line, and nothing is sent.

--wait waits until every proposal is applied (following the commit stream);
proposals that fail, are rejected or wait for a reviewer make the exit code 1.
--approve approves those waiting for a reviewer as they are made (needs the
reviewer role); proposals flagged for a conflict (needs_human_review) are left
to a person.
On a terminal a progress line shows counts, rate and ETA; a summary line is
always printed.`,
		Example: `  memctl ingest episode.json --agent my-agent
  memctl ingest examples/episodes.jsonl --agent my-agent --wait
  memctl ingest ./episodes/ --agent my-agent --parallel 16 --wait --approve
  cat episode.yaml | memctl ingest - --agent my-agent -o json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("want at least one PATH (a file, a folder or - for stdin)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.agent = c.agentFlag(cmd, o.agent)
			return c.ingest(cmd.Context(), o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.agent, "agent", "", "agent of episodes that do not name one (default: $MEMCTL_AGENT or the config's agent)")
	f.BoolVar(&o.wait, "wait", false, "wait until every proposal is applied")
	f.BoolVar(&o.approve, "approve", false, "approve proposals that wait for a reviewer (reviewer role)")
	f.BoolVar(&o.autoApprove, "auto-approve", false, "send the auto-approve hint (the agent's policy still decides)")
	f.IntVar(&o.parallel, "parallel", 8, "episodes in flight at once")
	f.DurationVar(&o.waitTimeout, "wait-timeout", 10*time.Minute, "with --wait: give up after this long")
	f.BoolVar(&o.list, "list", false, "table output: one row per episode (default: only those not applied)")
	return cmd
}

// ingestResult is what became of one episode.
type ingestResult struct {
	Source     string `json:"source"`
	AgentID    string `json:"agentId"`
	EpisodeID  string `json:"episodeId"`
	ProposalID string `json:"proposalId"`
	RunFile    string `json:"runFile"`
	Duplicate  bool   `json:"duplicate"`
	// Status is the proposal's status as last seen ("applied", "pending", …).
	Status string `json:"status"`
	// Reason is why it is not applied, when it is not.
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	code   int
}

// ingestSummary is the result of `memctl ingest` (-o json).
type ingestSummary struct {
	Episodes       int            `json:"episodes"`
	Proposals      int            `json:"proposals"`
	Duplicates     int            `json:"duplicates"`
	Applied        int            `json:"applied"`
	Failed         int            `json:"failed"`
	Rejected       int            `json:"rejected"`
	AwaitingReview int            `json:"awaitingReview"`
	Errors         int            `json:"errors"`
	Waited         bool           `json:"waited"`
	Seconds        float64        `json:"seconds"`
	PerSecond      float64        `json:"episodesPerSecond"`
	Results        []ingestResult `json:"results"`
}

func (c *cli) ingest(ctx context.Context, o *ingestOptions, paths []string) error {
	if o.parallel < 1 || o.parallel > 256 {
		return usagef("--parallel must be 1 to 256")
	}
	var items []episodefile.Item
	for _, p := range paths {
		got, err := episodefile.Read(p, c.in)
		if err != nil {
			return &usageError{msg: err.Error()}
		}
		items = append(items, got...)
	}
	for _, it := range items {
		if it.Request.GetAgentId() == "" {
			if o.agent == "" {
				return usagef("%s names no agent: give --agent (or set a default agent: MEMCTL_AGENT, memctl login --agent) or {\"agent_id\": …, \"episode\": …}", it.Source)
			}
			it.Request.AgentId = o.agent
		}
		if o.autoApprove && it.Request.AutoApprove == nil {
			t := true
			it.Request.AutoApprove = &t
		}
		// The write plane's own rules (pkg/episode), checked on a copy
		// before anything is sent: one bad episode of a batch ingests none.
		if err := episode.Normalize(proto.Clone(it.Request.GetEpisode()).(*memoryv1.Episode), time.Now()); err != nil {
			return &usageError{msg: fmt.Sprintf("%s: %s; nothing was ingested", it.Source, messageOf(err))}
		}
	}
	cl, err := c.clients(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	bar := progress.New(c.err, isTerminal(c.err), "ingest", len(items), time.Now)
	if o.wait {
		bar.Add("applied", 0)
	}
	bar.Add("sent", 0)

	var w *waiter
	waitCtx, cancelWait := context.WithTimeout(ctx, o.waitTimeout)
	defer cancelWait()
	if o.wait {
		w = newWaiter(cl, o.approve, bar)
		w.watch(waitCtx, agentsOf(items))
	}

	results := make([]ingestResult, len(items))
	var fatal error
	fatalCode := exitError
	var mu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	for range o.parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = c.ingestOne(ctx, cl, items[i])
				bar.Add("sent", 1)
				r := &results[i]
				if r.Error != "" {
					bar.Add("errors", 1)
					if r.code == exitDenied || r.code == exitUnavailable || r.code == exitError {
						mu.Lock()
						if fatal == nil {
							fatal, fatalCode = errors.New(r.Error), r.code
						}
						mu.Unlock()
					}
					continue
				}
				if o.approve && r.Status == "pending" && r.Reason != "staged" {
					c.approveNow(ctx, cl, r)
				}
				if w != nil {
					w.track(r)
				}
			}
		}()
	}
	for i := range items {
		mu.Lock()
		stop := fatal != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	// Episodes not sent because the batch stopped (an error every later
	// call would repeat, or an interrupt) are reported as such.
	for i := range results {
		if results[i].Source != "" {
			continue
		}
		why := "interrupted"
		if fatal != nil {
			why = fatal.Error()
		}
		results[i] = ingestResult{Source: items[i].Source, AgentID: items[i].Request.GetAgentId(), EpisodeID: items[i].Request.GetEpisode().GetEpisodeId(),
			Status: "not_sent", Error: "not sent, the batch stopped: " + why, code: fatalCode}
	}
	if w != nil {
		w.wait(waitCtx)
		w.finish(results)
	}
	bar.Done()

	sum := summarize(results, o.wait, time.Since(start))
	if err := c.printer.value(sum, func(t *table) {
		shown := 0
		for _, r := range sum.Results {
			if o.list || r.Error != "" || (o.wait && r.Status != "applied") {
				if shown == 0 {
					t.header("source", "agent", "episode", "proposal", "status", "reason")
				}
				shown++
				reason := r.Reason
				if r.Error != "" {
					reason = r.Error
				}
				t.row(r.Source, r.AgentID, r.EpisodeID, r.ProposalID, t.status(r.Status), reason)
			}
		}
		t.text(sum.line() + "\n")
	}); err != nil {
		return err
	}
	if c.printer.format != formatTable {
		_, _ = fmt.Fprintln(c.err, sum.line())
	}
	return sum.outcome(results)
}

func agentsOf(items []episodefile.Item) []string {
	var agents []string
	for _, it := range items {
		if !slices.Contains(agents, it.Request.GetAgentId()) {
			agents = append(agents, it.Request.GetAgentId())
		}
	}
	return agents
}

// ingestOne sends one episode, retrying rate limits and unavailability.
func (c *cli) ingestOne(ctx context.Context, cl *clients, it episodefile.Item) ingestResult {
	r := ingestResult{Source: it.Source, AgentID: it.Request.GetAgentId(), EpisodeID: it.Request.GetEpisode().GetEpisodeId()}
	var resp *memoryv1.IngestEpisodeResponse
	err := retryable(ctx, 8, func(ctx context.Context) error {
		var err error
		resp, err = cl.write.IngestEpisode(ctx, it.Request)
		return err
	})
	if err != nil {
		r.Error, r.code = reasonOf(err)+": "+messageOf(err), exitCodeOf(err)
		r.Status = "error"
		return r
	}
	p := resp.GetProposal()
	r.EpisodeID, r.RunFile, r.Duplicate = resp.GetEpisodeId(), resp.GetRunFile(), resp.GetDuplicate()
	r.ProposalID = p.GetProposalId()
	r.Status = short(p.GetStatus())
	if p.GetReason() != memoryv1.StatusReason_STATUS_REASON_UNSPECIFIED {
		r.Reason = short(p.GetReason())
	}
	return r
}

// approveNow approves a proposal that waits for a reviewer (--approve)
// as soon as it is made; a failure leaves it to the waiter, which polls
// and tries again, or reports it.
func (c *cli) approveNow(ctx context.Context, cl *clients, r *ingestResult) {
	var resp *memoryv1.ApproveProposalResponse
	err := retryable(ctx, 3, func(ctx context.Context) error {
		var err error
		resp, err = cl.write.ApproveProposal(ctx, &memoryv1.ApproveProposalRequest{ProposalId: r.ProposalID, Comment: "memctl ingest --approve"})
		return err
	})
	if err == nil {
		r.Status, r.Reason = short(resp.GetProposal().GetStatus()), reasonText(resp.GetProposal().GetReason())
	}
}

func summarize(results []ingestResult, waited bool, took time.Duration) ingestSummary {
	s := ingestSummary{Episodes: len(results), Waited: waited, Seconds: took.Seconds(), Results: results}
	proposals := map[string]bool{}
	for _, r := range results {
		if r.Error != "" {
			s.Errors++
			continue
		}
		proposals[r.ProposalID] = true
		if r.Duplicate {
			s.Duplicates++
		}
		switch r.Status {
		case "applied":
			s.Applied++
		case "failed":
			s.Failed++
		case "rejected":
			s.Rejected++
		case "awaiting_review":
			s.AwaitingReview++
		}
	}
	s.Proposals = len(proposals)
	if took > 0 {
		s.PerSecond = float64(len(results)) / took.Seconds()
	}
	return s
}

// line is the one-line summary printed after every ingest.
func (s ingestSummary) line() string {
	line := fmt.Sprintf("ingested %d episodes (%d duplicates) into %d proposals", s.Episodes-s.Errors, s.Duplicates, s.Proposals)
	if s.Waited {
		line += fmt.Sprintf("; applied %d, failed %d, rejected %d, awaiting review %d", s.Applied, s.Failed, s.Rejected, s.AwaitingReview)
	}
	if s.Errors > 0 {
		line += fmt.Sprintf("; %d errors", s.Errors)
	}
	return line + fmt.Sprintf("; %.1fs, %.1f episodes/s", s.Seconds, s.PerSecond)
}

// outcome is the command's error: nil when every episode went in (and,
// with --wait, was applied).
func (s ingestSummary) outcome(results []ingestResult) error {
	if s.Errors > 0 {
		code, first := 0, ""
		for _, r := range results {
			if r.Error == "" {
				continue
			}
			if first == "" {
				first = r.Error
			}
			if code != r.code {
				if code != 0 {
					code = exitError // mixed causes
					break
				}
				code = r.code
			}
		}
		// "REASON: message" of the first failure, as every error is printed.
		return &codedError{code: code, msg: fmt.Sprintf("%s (%d of %d episodes were not ingested)", first, s.Errors, s.Episodes)}
	}
	if s.Waited && s.Applied < s.Episodes {
		return &codedError{code: exitError, msg: fmt.Sprintf("INGEST: %d of %d episodes were not applied (failed %d, rejected %d, awaiting review %d; the rest still pending)",
			s.Episodes-s.Applied, s.Episodes, s.Failed, s.Rejected, s.AwaitingReview)}
	}
	return nil
}

// waiter follows the proposals of an ingest until each is applied, failed,
// rejected or waiting for a person: commits arrive on WatchCommits (one
// stream for all agents when the token may, else one per agent); proposals
// not seen committed are polled with GetProposal, which also finds the
// ones that will never commit.
type waiter struct {
	cl      *clients
	approve bool
	bar     *progress.Bar

	mu        sync.Mutex
	committed map[string]bool             // proposal ids seen on the stream
	pending   map[string]*pendingProposal // tracked, not final
	final     map[string]finalState
	changed   chan struct{}
}

type pendingProposal struct {
	// nextPoll is when to ask for it if the stream has not reported it;
	// every poll that finds it still on its way doubles the wait (to
	// maxPollEvery), so a long queue is not polled into a longer one.
	nextPoll time.Time
	every    time.Duration
	results  int // how many episodes share it (duplicates)
}

const (
	firstPollAfter = 2 * time.Second
	maxPollEvery   = 15 * time.Second
)

type finalState struct{ status, reason string }

func newWaiter(cl *clients, approve bool, bar *progress.Bar) *waiter {
	return &waiter{cl: cl, approve: approve, bar: bar, committed: map[string]bool{}, pending: map[string]*pendingProposal{},
		final: map[string]finalState{}, changed: make(chan struct{}, 1)}
}

// watch opens the commit streams before the first episode is sent, so no
// commit is missed (and polling catches any that would be).
func (w *waiter) watch(ctx context.Context, agents []string) {
	opened := make(chan error, 1)
	w.follow(ctx, "", opened)
	go func() {
		if err := <-opened; err != nil && len(agents) <= 64 {
			// Only service and admin tokens may watch every agent.
			for _, a := range agents {
				w.follow(ctx, a, make(chan error, 1))
			}
		}
	}()
}

func (w *waiter) follow(ctx context.Context, agent string, opened chan<- error) {
	go func() {
		stream, err := w.cl.write.WatchCommits(ctx, &memoryv1.WatchCommitsRequest{AgentId: agent})
		if err != nil {
			opened <- err
			return
		}
		first := true
		for {
			msg, err := stream.Recv()
			if first {
				first = false
				if err != nil {
					opened <- err
					return
				}
				opened <- nil
			}
			if err != nil {
				return
			}
			if id := msg.GetCommit().GetProposalId(); id != "" {
				w.mu.Lock()
				w.committed[id] = true
				if p, ok := w.pending[id]; ok {
					w.done(id, p, finalState{status: "applied"})
				}
				w.mu.Unlock()
			}
		}
	}()
}

// done records a final state (w.mu held).
func (w *waiter) done(id string, p *pendingProposal, s finalState) {
	delete(w.pending, id)
	w.final[id] = s
	w.bar.Add(barKey(s.status), p.results)
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// track follows r's proposal unless its answer is already final.
func (w *waiter) track(r *ingestResult) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := r.ProposalID
	if s, ok := w.final[id]; ok {
		w.bar.Add(barKey(s.status), 1)
		return
	}
	if p, ok := w.pending[id]; ok {
		p.results++
		return
	}
	p := &pendingProposal{nextPoll: time.Now().Add(firstPollAfter), every: firstPollAfter, results: 1}
	w.pending[id] = p
	switch {
	case r.Status == "applied" || w.committed[id]:
		w.done(id, p, finalState{status: "applied"})
	case r.Status == "failed" || r.Status == "rejected":
		w.done(id, p, finalState{status: r.Status, reason: r.Reason})
	}
}

func barKey(status string) string {
	if status == "awaiting_review" {
		return "awaiting review"
	}
	return status
}

// wait returns when no proposal is pending or ctx ends; it polls those
// the stream has not reported for a while.
func (w *waiter) wait(ctx context.Context) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		w.mu.Lock()
		n := len(w.pending)
		var stale []string
		now := time.Now()
		for id, p := range w.pending {
			if !now.Before(p.nextPoll) {
				stale = append(stale, id)
			}
		}
		w.mu.Unlock()
		if n == 0 {
			return
		}
		slices.Sort(stale)
		if len(stale) > 64 {
			stale = stale[:64]
		}
		w.mu.Lock()
		for _, id := range stale {
			p := w.pending[id]
			p.every = min(2*p.every, maxPollEvery)
			p.nextPoll = now.Add(p.every)
		}
		w.mu.Unlock()
		w.poll(ctx, stale)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-w.changed:
		}
	}
}

// poll asks for the proposals' status; those waiting for a reviewer are
// approved with --approve, else reported as awaiting review.
func (w *waiter) poll(ctx context.Context, ids []string) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var resp *memoryv1.GetProposalResponse
			err := retryable(ctx, 3, func(ctx context.Context) error {
				var err error
				resp, err = w.cl.write.GetProposal(ctx, &memoryv1.GetProposalRequest{ProposalId: id})
				return err
			})
			if err != nil {
				return
			}
			p := resp.GetProposal()
			st := finalState{status: short(p.GetStatus())}
			if p.GetReason() != memoryv1.StatusReason_STATUS_REASON_UNSPECIFIED {
				st.reason = short(p.GetReason())
			}
			switch p.GetStatus() {
			case memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED,
				memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED:
			case memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW:
				if p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING && p.GetReason() == memoryv1.StatusReason_STATUS_REASON_STAGED {
					return
				}
				if w.approve && p.GetStatus() == memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING {
					_, err := w.cl.write.ApproveProposal(ctx, &memoryv1.ApproveProposalRequest{ProposalId: id, Comment: "memctl ingest --approve"})
					if err == nil || status.Code(err) == codes.FailedPrecondition {
						w.mu.Lock()
						if pp, ok := w.pending[id]; ok {
							pp.every = firstPollAfter
							pp.nextPoll = time.Now().Add(pp.every)
						}
						w.mu.Unlock()
						return
					}
					st.reason = reasonOf(err) + ": " + messageOf(err)
				}
				st.status = "awaiting_review"
			default:
				return // approved or applying: the commit is coming
			}
			w.mu.Lock()
			if pp, ok := w.pending[id]; ok {
				w.done(id, pp, st)
			}
			w.mu.Unlock()
		}()
	}
	wg.Wait()
}

// finish writes the final states into the results.
func (w *waiter) finish(results []ingestResult) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range results {
		r := &results[i]
		if r.Error != "" {
			continue
		}
		if s, ok := w.final[r.ProposalID]; ok {
			r.Status, r.Reason = s.status, s.reason
		}
	}
}
