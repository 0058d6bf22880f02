// Package contextassembly is the context-assembly target: how an agent's run
// gets its memory — read-memory, Layer 2, memory diff and history (read
// plane). It opens the canonical repository read-only and never writes git.
package contextassembly

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/history"
	"github.com/garden-bloom/memory/pkg/lru"
	"github.com/garden-bloom/memory/pkg/membudget"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memread"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/telemetry"
	"github.com/garden-bloom/memory/pkg/tokens"
)

// Name is the fully-qualified gRPC service name, also its health-check name.
var Name = memoryv1.ContextAssemblyService_ServiceDesc.ServiceName

// Deps are what the service is built on.
type Deps struct {
	// RepoPath is the canonical bare repository, opened read-only.
	RepoPath string
	// Repo, when set, is the repository handle to share with the other
	// services of the process (one set of object caches); else RepoPath
	// is opened on first use.
	Repo   *memrepo.Lazy
	Logger *slog.Logger
	// TokenEncoding is the tiktoken encoding; "" = cl100k_base.
	TokenEncoding string
	// Search is search-index's client, for query hints (nil: no hits).
	Search memoryv1.SearchIndexServiceClient
	// Graph is entity-graph's client, for graph-aware retrieval (nil:
	// none; a request that asks for it is told).
	Graph memoryv1.EntityGraphServiceClient
	// Blobs is the object store with the agents' sources (nil: none).
	Blobs blob.Store
	// Usage is proposal-apply's client, for fact usage reports (nil: none).
	Usage memoryv1.ProposalApplyServiceClient
	// MeterProvider receives the caches' figures (nil: not measured).
	MeterProvider metric.MeterProvider
	// Retrieval tunes what fills the budget after Layer 1; the zero value
	// is DefaultRetrieval.
	Retrieval *Retrieval
	// Now is the clock GetStaleFacts judges expiry by, and source listings
	// age by; nil = time.Now. Reads judge expiry by the commit's time
	// instead (stale.go).
	Now func() time.Time
}

// Service is the context-assembly service.
type Service struct {
	deps    Deps
	logger  *slog.Logger
	counter *tokens.Counter

	repo *memrepo.Lazy

	// blocks memoises each agent folder's ALWAYS_LOAD blocks by the
	// folder's tree hash, so reads do not scan every run file each time.
	blocks *lru.Cache[plumbing.Hash, []memread.Block]
	// reads memoises reads of an agent folder by its tree hash and the
	// request (see readFolder).
	reads *lru.Cache[readKey, *folderRead]
	// counts memoises token counts of files by blob hash.
	counts *blobCounts
	// sourceTexts holds the object-store sources' texts by key and ETag;
	// sourceLists each agent's listing of them, for sourceListTTL.
	sourceTexts *lru.Cache[contentKey, string]
	sourceLists *lru.Cache[string, *sourceList]
	retrieval   Retrieval
	// agentCommits lists each agent's commits for ListHistory.
	agentCommits history.AgentIndex

	usage  *usage
	cancel context.CancelFunc
	bg     sync.WaitGroup
	// observing is the cache metrics' callback, unregistered by Stop.
	observing metric.Registration
}

// Cache sizes in approximate bytes. A basic read of an agent near its
// Layer 1 limits holds ~25 KB, so 64 MiB keeps the hot reads of a few
// thousand agents.
const (
	blockCacheSize = 8 << 20
	readCacheSize  = 64 << 20
	// blobCountSize holds about 130,000 counts: the Layer 1 files and
	// meta.json of 30,000 agents.
	blobCountSize = 16 << 20
	// sourceCacheSize holds the sources of a few thousand agents (the
	// benchmark's are two of ~5 KB each).
	sourceCacheSize = 16 << 20
	// sourceListSize holds the listings of thousands of agents (two
	// sources each in the benchmark: ~300 bytes).
	sourceListSize = 2 << 20
)

// New returns the service.
func New(d Deps) (*Service, error) {
	counter, err := tokens.New(d.TokenEncoding)
	if err != nil {
		return nil, err
	}
	logger := d.Logger.With("service", "context-assembly")
	retrieval := DefaultRetrieval
	if d.Retrieval != nil {
		if err := d.Retrieval.Validate(); err != nil {
			return nil, err
		}
		retrieval = *d.Retrieval
	}
	s := &Service{deps: d, logger: logger, counter: counter, repo: memrepo.LazyFor(d.Repo, d.RepoPath), retrieval: retrieval,
		blocks: lru.New[plumbing.Hash, []memread.Block](blockCacheSize), reads: lru.New[readKey, *folderRead](readCacheSize),
		counts: newBlobCounts(blobCountSize), sourceTexts: lru.New[contentKey, string](sourceCacheSize),
		sourceLists: lru.New[string, *sourceList](sourceListSize),
		usage:       newUsage(d.Usage, logger)}
	if s.observing, err = telemetry.ObserveCaches(d.MeterProvider, s.Caches); err != nil {
		logger.Warn("cache metrics not registered", "err", err)
	}
	return s, nil
}

// Caches are the service's caches, for memory.cache.* (attribute cache)
// and the process's memory budget.
func (s *Service) Caches() []membudget.Named {
	return []membudget.Named{
		{Name: "context_assembly.read_folders", Cache: s.reads},
		{Name: "context_assembly.always_load_blocks", Cache: s.blocks},
		{Name: "context_assembly.token_counts", Cache: s.counts.cache},
		{Name: "context_assembly.source_texts", Cache: s.sourceTexts},
		{Name: "context_assembly.source_lists", Cache: s.sourceLists},
		{Name: "context_assembly.token_pieces", Cache: s.counter.Cache()},
	}
}

// now is Deps.Now, or the time.
func (s *Service) now() time.Time {
	if s.deps.Now != nil {
		return s.deps.Now()
	}
	return time.Now()
}

// Start runs the usage reporter until Stop.
func (s *Service) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.bg.Go(func() { s.usage.run(ctx) })
}

// Stop sends the last usage report and stops.
func (s *Service) Stop() {
	if s.observing != nil {
		_ = s.observing.Unregister()
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.bg.Wait()
}

// Register adds the service's gRPC handlers to g.
func (s *Service) Register(g grpc.ServiceRegistrar) {
	memoryv1.RegisterContextAssemblyServiceServer(g, &handler{svc: s})
}

// count counts text's tokens; tokens.Counter memoises the counts of the
// pieces it splits text into, so repeated files cost lookups only.
func (s *Service) count(text string) int { return s.counter.Count(text) }

// openRepo opens the repository once it exists.
func (s *Service) openRepo() (*memrepo.Repo, error) { return s.repo.Get() }

// agentFiles reads an agent's files (relative names) at a commit.
type agentFiles struct {
	ctx    context.Context
	repo   *memrepo.Repo
	commit plumbing.Hash
	agent  string
	tree   plumbing.Hash // the agent folder's hash at commit
	// memo, when set, keeps the files read so far: one request reads
	// snapshot.md up to three times (snapshot check, ALWAYS_LOAD blocks,
	// the read itself).
	memo map[string]memoFile
}

// memoFile is a file read through a memoized agentFiles.
type memoFile struct {
	content string
	blob    plumbing.Hash
}

// memoized returns a copy of a whose reads are kept for its lifetime.
func (a agentFiles) memoized() agentFiles {
	a.memo = map[string]memoFile{}
	return a
}

func (a agentFiles) read(rel string) (string, bool, error) {
	if f, ok := a.memo[rel]; ok {
		return f.content, true, nil
	}
	f, err := memlayout.Resolve(a.agent, rel)
	if err != nil {
		return "", false, err
	}
	content, blob, err := a.repo.ReadTextBlob(a.ctx, a.commit, f.Path)
	if errors.Is(err, memrepo.ErrFileNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if a.memo != nil {
		a.memo[rel] = memoFile{content: content, blob: blob}
	}
	return content, true, nil
}

func (a agentFiles) list(dir string) ([]string, error) {
	paths, err := a.repo.ListFiles(a.ctx, a.commit, memlayout.AgentDir(a.agent)+dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, p[len(memlayout.AgentDir(a.agent)):])
	}
	return out, nil
}

// alwaysLoad returns the agent's ALWAYS_LOAD blocks at the files' commit.
func (s *Service) alwaysLoad(files agentFiles) ([]memread.Block, error) {
	if blocks, ok := s.blocks.Get(files.tree); ok {
		return blocks, nil
	}
	blocks, err := memread.CollectAlwaysLoad(memread.Source{Read: files.read, List: files.list, Count: s.count})
	if err != nil {
		return nil, err
	}
	cost := int64(64)
	for i, b := range blocks {
		blocks[i].Content = strings.Clone(b.Content) // not a substring keeping the whole file
		cost += int64(len(b.Rel) + len(b.Content) + 32)
	}
	s.blocks.Put(files.tree, blocks, cost)
	return blocks, nil
}

// folderHash returns the hash of the agent's folder at the files' commit;
// zero when the agent has no memory there (git keeps no empty trees).
func (a agentFiles) folderHash() (plumbing.Hash, error) {
	return a.repo.TreeHash(a.ctx, a.commit, strings.TrimSuffix(memlayout.AgentDir(a.agent), "/"))
}
