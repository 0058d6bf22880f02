package benchharness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// commitWatcher follows WatchCommits and tells waiters when the commit of
// a proposal arrived.
type commitWatcher struct {
	mu      sync.Mutex
	seen    map[string]time.Time
	waiters map[string]chan time.Time
	err     error
	resumed int
}

// watchCommits follows the commits after head (so none made after this
// call is missed, however late the stream is set up).
func watchCommits(ctx context.Context, pa memoryv1.ProposalApplyServiceClient, head string) (*commitWatcher, error) {
	stream, err := pa.WatchCommits(ctx, &memoryv1.WatchCommitsRequest{FromSha: head})
	if err != nil {
		return nil, err
	}
	w := &commitWatcher{seen: map[string]time.Time{}, waiters: map[string]chan time.Time{}}
	go w.follow(ctx, pa, stream, head)
	return w, nil
}

// follow delivers the stream's commits. A stream ends when the server
// says so — memoryd closes every connection after its maximum age (30
// minutes by default), and restarts — so, as any client of WatchCommits
// must, it resumes after the last commit it saw; only ctx ending, or ten
// failed attempts in a row, ends it.
func (w *commitWatcher) follow(ctx context.Context, pa memoryv1.ProposalApplyServiceClient, stream memoryv1.ProposalApplyService_WatchCommitsClient, last string) {
	got := false // commits on this stream
	for {
		resp, err := stream.Recv()
		if err != nil {
			if !got {
				time.Sleep(200 * time.Millisecond) // a stream that ends at once: do not spin
			}
			got = false
			for attempt := 1; ctx.Err() == nil && attempt <= 10; attempt++ {
				if stream, err = pa.WatchCommits(ctx, &memoryv1.WatchCommitsRequest{FromSha: last}); err == nil {
					w.mu.Lock()
					w.resumed++
					w.mu.Unlock()
					break
				}
				time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
			}
			if err != nil {
				w.fail(err)
				return
			}
			continue
		}
		now := time.Now()
		got, last = true, resp.GetCommit().GetSha()
		id := resp.GetCommit().GetProposalId()
		w.mu.Lock()
		if ch, ok := w.waiters[id]; ok {
			ch <- now
			delete(w.waiters, id)
		} else if id != "" {
			if len(w.seen) > 100000 {
				w.seen = map[string]time.Time{}
			}
			w.seen[id] = now
		}
		w.mu.Unlock()
	}
}

// fail ends the watch: every waiter, and every later wait, gets err.
func (w *commitWatcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
	for _, ch := range w.waiters {
		close(ch)
	}
	w.waiters = map[string]chan time.Time{}
}

// resumedStreams is how many times the stream was resumed.
func (w *commitWatcher) resumedStreams() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resumed
}

// wait returns when the commit of proposal id arrived on the stream.
func (w *commitWatcher) wait(ctx context.Context, id string) (time.Time, error) {
	w.mu.Lock()
	if t, ok := w.seen[id]; ok {
		delete(w.seen, id)
		w.mu.Unlock()
		return t, nil
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return time.Time{}, fmt.Errorf("commit stream: %w", err)
	}
	ch := make(chan time.Time, 1)
	w.waiters[id] = ch
	w.mu.Unlock()
	select {
	case t, ok := <-ch:
		if !ok {
			return time.Time{}, errors.New("commit stream ended")
		}
		return t, nil
	case <-ctx.Done():
		w.mu.Lock()
		delete(w.waiters, id)
		w.mu.Unlock()
		return time.Time{}, fmt.Errorf("commit of %s not seen: %w", id, ctx.Err())
	}
}

// probe is a unique word: letters, then a digit so no stemmer changes it.
func probe(r *rand.Rand) string {
	const letters = "bcdfghjklmnpqrstvwxz"
	b := []byte("zq")
	for range 10 {
		b = append(b, letters[r.IntN(len(letters))])
	}
	return string(b) + "7"
}

// propose appends a fact holding word to agent's facts.md.
func propose(ctx context.Context, pa memoryv1.ProposalApplyServiceClient, agent, word string, r *rand.Rand) (string, error) {
	resp, err := pa.Propose(ctx, &memoryv1.ProposeRequest{
		AgentId: agent, RunId: "run_bench_" + randomID(r, 5),
		Updates: []*memoryv1.FileUpdate{{File: "facts.md", Operation: memoryv1.Operation_OPERATION_APPEND, Section: "Benchmark",
			Content: "- Benchmark probe " + word + " was recorded by the load driver"}},
		Reasoning: "membench perf probe",
	})
	if err != nil {
		return "", err
	}
	switch resp.GetStatus() {
	case memoryv1.ProposalStatus_PROPOSAL_STATUS_APPROVED, memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLYING,
		memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED:
		return resp.GetProposalId(), nil
	}
	return "", fmt.Errorf("proposal %s is %s, not auto-approved", resp.GetProposalId(), resp.GetStatus())
}

// applyOp proposes a fact for a random agent and returns once its commit
// is on the stream: the latency is Propose → commit observed.
func applyOp(d *deployment, w *workload, cw *commitWatcher) op {
	return func(ctx context.Context, r *rand.Rand) (int, error) {
		_, agent := w.agent(r)
		id, err := propose(ctx, d.pa, agent, probe(r), r)
		if err != nil {
			return 0, err
		}
		_, err = cw.wait(ctx, id)
		return 0, err
	}
}

// lagResult holds the two visibility lags of one probe.
type lagResult struct {
	searchable, readable []time.Duration
	errors               int
	first                string
}

// measureLags proposes facts one at a time for random agents; from the
// moment each commit arrives on the harness's WatchCommits stream it polls
// Search (the probe word, agent filter) and ReadMemory wide on the read
// plane until both show the fact.
func measureLags(ctx context.Context, d *deployment, w *workload, cw *commitWatcher, dur time.Duration, seed int64) lagResult {
	r := rand.New(rand.NewPCG(uint64(seed), 0x1a6))
	var res lagResult
	fail := func(err error) {
		res.errors++
		if res.first == "" {
			res.first = err.Error()
		}
	}
	end := time.Now().Add(dur)
	for time.Now().Before(end) && ctx.Err() == nil {
		_, agent := w.agent(r)
		word := probe(r)
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		id, err := propose(c, d.pa, agent, word, r)
		var committed time.Time
		if err == nil {
			committed, err = cw.wait(c, id)
		}
		if err != nil {
			cancel()
			fail(err)
			continue
		}
		var searchable, readable time.Duration
		for (searchable == 0 || readable == 0) && c.Err() == nil {
			if searchable == 0 {
				s, err := d.si.Search(c, &memoryv1.SearchRequest{Query: word, AgentId: agent})
				if err == nil && len(s.GetResults()) > 0 {
					searchable = max(time.Since(committed), time.Nanosecond)
				}
			}
			if readable == 0 {
				m, err := d.ca.ReadMemory(c, &memoryv1.ReadMemoryRequest{AgentId: agent, Mode: memoryv1.ReadMode_READ_MODE_WIDE})
				if err == nil && strings.Contains(m.GetContent()["facts.md"], word) {
					readable = max(time.Since(committed), time.Nanosecond)
				}
			}
			if searchable == 0 || readable == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		cancel()
		if searchable == 0 || readable == 0 {
			fail(fmt.Errorf("probe %s of %s not visible within 30s (searchable %v, readable %v)", word, agent, searchable > 0, readable > 0))
			continue
		}
		res.searchable = append(res.searchable, searchable)
		res.readable = append(res.readable, readable)
	}
	return res
}
