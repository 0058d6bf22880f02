package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/garden-bloom/memory/cmd/memoryd/app"
	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/telemetry"
)

// Lucene reference, whole turns packed greedily (../shared/data/README.md).
var locomoReference = map[int]float64{1000: 64.0, 2000: 71.0, 4000: 77.2, 8000: 83.2}

var locomoBudgets = []int{1000, 2000, 4000, 8000}

type locomoTurn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
}

type locomoQA struct {
	Question string   `json:"question"`
	Evidence []string `json:"evidence"`
	Category int      `json:"category"`
}

type locomoSample struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []locomoQA                 `json:"qa"`
}

var (
	sessionKey = regexp.MustCompile(`^session_(\d+)$`)
	evidenceID = regexp.MustCompile(`D:?(\d+):0*(\d+)`)
)

// normalizeEvidence fixes the data set's malformed ids ("D8:6; D9:17",
// "D:11:26", "D30:05") into tags like "D8:6".
func normalizeEvidence(ev []string) []string {
	var out []string
	for _, e := range ev {
		for _, m := range evidenceID.FindAllStringSubmatch(e, -1) {
			out = append(out, "D"+m[1]+":"+m[2])
		}
	}
	return out
}

// locomo runs the memory-retrieval protocol of ../shared/data/README.md
// through the product: each conversation is an agent whose sessions are its
// sources (one turn per line, tagged [D<session>:<turn>]); each question is a
// query hint to AssembleContext under a token budget; evidence recall is the
// share of the question's evidence turns whose tag is in the context.
func locomo(ctx context.Context, path, work string, out io.Writer) (err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var samples []locomoSample
	if err := json.Unmarshal(raw, &samples); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	dataDir := filepath.Join(work, "locomo")
	cfg, flags, err := app.LoadConfig([]string{"--data-dir", dataDir, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--auto-approve-default", "--search-sources-poll", "200ms"}, func(string) (string, bool) { return "", false })
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	a, err := app.New(runCtx, cfg, flags, telemetry.NewLogger(io.Discard, 8))
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	// The logs go nowhere: a server that failed says so here.
	defer func() { stop(); err = errors.Join(err, <-done) }()

	conn, err := grpc.NewClient(a.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	secret, err := auth.LoadSecret(filepath.Join(dataDir, "auth.secret"))
	if err != nil {
		return err
	}
	signer, _ := auth.NewSigner(secret)
	tok, _ := signer.Mint("membench", []auth.Role{auth.RoleService}, []string{"*"}, 24*time.Hour)
	call := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	pa := memoryv1.NewProposalApplyServiceClient(conn)
	ca := memoryv1.NewContextAssemblyServiceClient(conn)
	si := memoryv1.NewSearchIndexServiceClient(conn)
	blobs, err := blob.NewFS(filepath.Join(dataDir, "objects"))
	if err != nil {
		return err
	}

	start := time.Now()
	sources := 0
	agents := make([]string, len(samples))
	for i, s := range samples {
		agent := strings.ToLower(strings.ReplaceAll(s.SampleID, "_", "-"))
		agents[i] = agent
		var keys []string
		for k := range s.Conversation {
			if sessionKey.MatchString(k) {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(x, y int) bool {
			return len(keys[x]) < len(keys[y]) || len(keys[x]) == len(keys[y]) && keys[x] < keys[y]
		})
		for _, k := range keys {
			var turns []locomoTurn
			if err := json.Unmarshal(s.Conversation[k], &turns); err != nil {
				return err
			}
			var date string
			_ = json.Unmarshal(s.Conversation[k+"_date_time"], &date)
			var b strings.Builder
			fmt.Fprintf(&b, "# %s — %s\n\n", strings.ReplaceAll(k, "_", " "), date)
			for _, t := range turns {
				fmt.Fprintf(&b, "- [%s] %s: %s\n", t.DiaID, t.Speaker, strings.Join(strings.Fields(t.Text), " "))
			}
			if _, err := blob.PutBytes(ctx, blobs, "agents/"+agent+"/sources/"+k+".md", []byte(b.String()), blob.PutOptions{}); err != nil {
				return err
			}
			sources++
		}
		// The agent needs memory of its own: a snapshot, through a proposal.
		if _, err := pa.Propose(call, &memoryv1.ProposeRequest{AgentId: agent, RunId: "run_setup", Updates: []*memoryv1.FileUpdate{{
			File: "snapshot.md", Operation: memoryv1.Operation_OPERATION_REPLACE, Content: "# Snapshot: " + agent + "\n\nA long conversation.\n"}}}); err != nil {
			return err
		}
	}
	for {
		st, err := si.GetIndexStatus(call, &memoryv1.GetIndexStatusRequest{})
		if err != nil {
			return err
		}
		if int(st.GetDocuments()) >= sources+len(samples) && st.GetLagCommits() == 0 {
			break
		}
		if time.Since(start) > 5*time.Minute {
			return fmt.Errorf("indexing did not finish: %d documents", st.GetDocuments())
		}
		time.Sleep(100 * time.Millisecond)
	}
	indexTime := time.Since(start)

	recall := map[int]map[int][]float64{} // budget -> category -> per-question recall
	questions := 0
	start = time.Now()
	for i, s := range samples {
		for _, q := range s.QA {
			ev := normalizeEvidence(q.Evidence)
			if q.Category < 1 || q.Category > 4 || len(ev) == 0 {
				continue
			}
			questions++
			for _, budget := range locomoBudgets {
				resp, err := ca.AssembleContext(call, &memoryv1.AssembleContextRequest{AgentId: agents[i], QueryHint: q.Question, Budget: int32(budget), TopK: 100})
				if err != nil {
					return fmt.Errorf("%s: %w", q.Question, err)
				}
				var all strings.Builder
				for _, sec := range resp.GetSections() {
					all.WriteString(sec.GetContent())
				}
				text := all.String()
				found := 0
				for _, e := range ev {
					if strings.Contains(text, "["+e+"]") {
						found++
					}
				}
				if recall[budget] == nil {
					recall[budget] = map[int][]float64{}
				}
				recall[budget][q.Category] = append(recall[budget][q.Category], float64(found)/float64(len(ev)))
			}
		}
	}
	queryTime := time.Since(start)

	mean := func(xs []float64) float64 {
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return 100 * sum / float64(max(1, len(xs)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## LoCoMo (%d conversations, %d questions with evidence, categories 1–4) through AssembleContext over gRPC\n\n", len(samples), questions)
	fmt.Fprintf(&b, "| budget (tokens) | evidence recall | Lucene whole turns | multi-hop | temporal | open-domain | single-hop |\n|---|---|---|---|---|---|---|\n")
	for _, budget := range locomoBudgets {
		var overall []float64
		for c := 1; c <= 4; c++ {
			overall = append(overall, recall[budget][c]...)
		}
		fmt.Fprintf(&b, "| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", budget, mean(overall), locomoReference[budget],
			mean(recall[budget][1]), mean(recall[budget][2]), mean(recall[budget][3]), mean(recall[budget][4]))
	}
	fmt.Fprintf(&b, "\nindexed %d sessions in %s; %d context assemblies in %s\n", sources, indexTime.Round(time.Millisecond),
		questions*len(locomoBudgets), queryTime.Round(time.Millisecond))
	_, err = io.WriteString(out, b.String())
	return err
}
