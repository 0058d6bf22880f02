package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/garden-bloom/memory/cmd/membench/internal/ireval"
	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/services/searchindex"
)

// Lucene BM25 reference figures for SciFact (../shared/data/README.md).
const (
	luceneNDCG10    = 0.6789
	luceneRecall100 = 0.9253
	scifactAgent    = "scifact"
)

// qualityOptions are membench quality's flags.
type qualityOptions struct {
	data, work, agentMemory string
	// only names the sets to measure ("" = all).
	only string
	// ablation measures each component switched alone, not only the
	// defaults.
	ablation bool
}

func (o qualityOptions) wants(set string) bool {
	return o.only == "" || slices.Contains(strings.Split(o.only, ","), set)
}

func quality(ctx context.Context, o qualityOptions, out io.Writer) error {
	work, cleanup, err := workDir(o.work, "membench-")
	if err != nil {
		return err
	}
	defer cleanup()
	if o.wants("scifact") {
		sf := filepath.Join(o.data, "scifact")
		if _, err := os.Stat(filepath.Join(sf, "corpus.jsonl")); err != nil {
			if _, err := fmt.Fprintf(out, "SciFact: no data at %s — skipped\n", sf); err != nil {
				return err
			}
		} else if err := scifact(ctx, sf, work, out); err != nil {
			return err
		}
	}
	if o.wants("locomo") {
		lc := filepath.Join(o.data, "locomo", "locomo10.json")
		if _, err := os.Stat(lc); err != nil {
			if _, err := fmt.Fprintf(out, "LoCoMo: no data at %s — skipped\n", lc); err != nil {
				return err
			}
		} else {
			set, err := loadLocomo(lc)
			if err != nil {
				return err
			}
			if err := retrieval(ctx, set, work, o.ablation, out); err != nil {
				return err
			}
		}
	}
	if o.wants("agentmem") {
		set, err := loadAgentMemory(o.agentMemory)
		if err != nil {
			return err
		}
		return retrieval(ctx, set, work, o.ablation, out)
	}
	return nil
}

// searchServer runs the search-index service on a loopback gRPC server, as
// the product does, and returns a client with a service token.
func searchServer(ctx context.Context, repoPath, indexDir string) (*searchindex.Service, memoryv1.SearchIndexServiceClient, context.Context, func(), error) {
	svc, err := searchindex.New(searchindex.Config{IndexDir: indexDir, HeadPoll: 50 * time.Millisecond, SourcesPoll: time.Hour},
		searchindex.Deps{RepoPath: repoPath, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	secret = []byte(fmt.Sprintf("%x", secret))
	signer, _ := auth.NewSigner(secret)
	verifier, _ := auth.NewVerifier(secret)
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(auth.UnaryServerInterceptor(verifier, nil)))
	svc.Register(srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, nil, nil, err
	}
	tok, _ := signer.Mint("membench", []auth.Role{auth.RoleService}, []string{"*"}, 24*time.Hour)
	callCtx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	stop := func() { _ = conn.Close(); srv.Stop(); svc.Stop() }
	return svc, memoryv1.NewSearchIndexServiceClient(conn), callCtx, stop, nil
}

// scifact writes every abstract as a Markdown run file of one agent, lets the
// search-index service index the commit, searches the 300 test claims through
// gRPC and scores the ranking with trec_eval semantics.
func scifact(ctx context.Context, dir, work string, out io.Writer) error {
	corpus, queries, qrels, err := ireval.LoadBEIR(dir)
	if err != nil {
		return err
	}
	repo, err := memrepo.Init(ctx, filepath.Join(work, "memory.git"), memrepo.InitOptions{})
	if err != nil {
		return err
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return err
	}
	changes := make([]memrepo.Change, 0, len(corpus))
	for _, d := range corpus {
		changes = append(changes, memrepo.Change{
			Path:    "memory/" + scifactAgent + "/runs/run_" + d.ID + ".md",
			Content: []byte("# " + d.Title + "\n\n" + d.Text + "\n"),
		})
	}
	if _, err := repo.Commit(ctx, memrepo.CommitRequest{Parent: head, Changes: changes, Message: "benchmark: SciFact corpus"}); err != nil {
		return err
	}

	svc, client, callCtx, stop, err := searchServer(ctx, repo.Path(), filepath.Join(work, "index"))
	if err != nil {
		return err
	}
	defer stop()
	start := time.Now()
	svc.Start(ctx)
	if err := svc.WaitCurrent(ctx); err != nil {
		return err
	}
	indexTime := time.Since(start)

	ids := make([]string, 0, len(qrels))
	for id := range qrels {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	// Each query twice: as searched, and expanded (RM3, `expand`), the
	// component context assembly may switch on (--context-expand).
	runs := map[bool]ireval.Run{false: {}, true: {}}
	lat := make([]time.Duration, 0, len(ids))
	start = time.Now()
	for _, expand := range []bool{false, true} {
		run := runs[expand]
		for _, qid := range ids {
			t0 := time.Now()
			resp, err := client.Search(callCtx, &memoryv1.SearchRequest{Query: queries[qid], TopK: 100, AgentId: scifactAgent, Layer: 2, Expand: expand})
			if err != nil {
				return fmt.Errorf("query %s: %w", qid, err)
			}
			if !expand {
				lat = append(lat, time.Since(t0))
			}
			best := map[string]float64{}
			for _, r := range resp.GetResults() {
				doc := strings.TrimSuffix(strings.TrimPrefix(r.GetFile(), "memory/"+scifactAgent+"/runs/run_"), ".md")
				if doc == qid { // BEIR: a hit whose id equals the query id is removed
					continue
				}
				if s, ok := best[doc]; !ok || r.GetScore() > s {
					best[doc] = r.GetScore()
				}
			}
			for doc, s := range best {
				run[qid] = append(run[qid], ireval.Hit{DocID: doc, Score: s})
			}
		}
	}
	queryTime := time.Since(start)
	slices.Sort(lat)
	ndcg, recall := ireval.NDCG(qrels, runs[false], 10), ireval.Recall(qrels, runs[false], 100)
	xNDCG, xRecall := ireval.NDCG(qrels, runs[true], 10), ireval.Recall(qrels, runs[true], 100)

	var b strings.Builder
	fmt.Fprintf(&b, "## SciFact (BEIR test, %d queries, %d documents) through search-index over gRPC\n\n", len(ids), len(corpus))
	fmt.Fprintf(&b, "| metric | Garden Bloom | Lucene BM25 (flat) | ratio |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| nDCG@10 | %.4f | %.4f | %.3f |\n", ndcg, luceneNDCG10, ndcg/luceneNDCG10)
	fmt.Fprintf(&b, "| Recall@100 | %.4f | %.4f | %.3f |\n", recall, luceneRecall100, recall/luceneRecall100)
	fmt.Fprintf(&b, "\nwith query expansion (RM3, `expand`): nDCG@10 %.4f (%+.4f), Recall@100 %.4f (%+.4f)\n", xNDCG, xNDCG-ndcg, xRecall, xRecall-recall)
	fmt.Fprintf(&b, "\nindex %d documents: %s; %d queries twice: %s; query latency (not expanded) p50 %s, p95 %s\n",
		len(corpus), indexTime.Round(time.Millisecond), len(ids), queryTime.Round(time.Millisecond),
		lat[len(lat)/2].Round(10*time.Microsecond), lat[len(lat)*95/100].Round(10*time.Microsecond))
	_, err = io.WriteString(out, b.String())
	return err
}
