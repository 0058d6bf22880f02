package contextassembly

import (
	"context"
	"errors"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memread"
)

// readKey names a read of an agent folder. A folder's tree hash fixes every
// byte of its files, so the same key always gives the same result: cached
// reads need no invalidation, and a commit to one agent leaves every other
// agent's cached reads valid.
type readKey struct {
	agent       string
	tree        plumbing.Hash
	mode        memread.Mode
	maxTokens   int
	include     string // NUL-joined
	exclude     string
	today       string // deep mode only: it picks the timeline days
	reserveMeta bool
	// pathHeaders: files are named by their repository path (AssembleContext
	// sets req.Header so), which changes what fits.
	pathHeaders bool
}

// folderRead is a read of an agent folder: shared once cached, so nothing
// may modify it.
type folderRead struct {
	res  *memread.Result
	meta memlayout.Meta
}

func (r *folderRead) cost() int64 {
	n := int64(512)
	for _, f := range r.res.Files {
		n += int64(len(f.Rel)+len(f.Content)) + 64
	}
	for _, w := range r.res.Warnings {
		n += int64(len(w)) + 16
	}
	return n
}

// readFolder reads the agent's files for req (memread.Read), after checking
// the snapshot is sound. With reserveMeta, the meta block's tokens
// (metaBlock) count against the budget (ReadMemory returns it beside the
// files). A budget too small for any answer is a *memread.BudgetTooSmallError
// (see budgetError). extra, when set,
// renders files added after the mode's own (temporal diffs); such reads
// depend on more than the folder and are not cached. The result is shared:
// callers must not modify it.
func (s *Service) readFolder(ctx context.Context, files agentFiles, req memread.Request, reserveMeta bool, extra func() ([]memread.File, error)) (*folderRead, error) {
	key := readKey{agent: files.agent, tree: files.tree, mode: req.Mode, maxTokens: req.MaxTokens,
		include: strings.Join(req.Include, "\x00"), exclude: strings.Join(req.Exclude, "\x00"), reserveMeta: reserveMeta,
		pathHeaders: req.Header != nil}
	if req.Mode == memread.Deep {
		key.today = req.Today
	}
	if extra == nil {
		if r, ok := s.reads.Get(key); ok {
			return r, nil
		}
	}
	files = files.memoized()
	count := s.counts.counter(files.memo, s.count)
	if err := s.checkSnapshot(ctx, files); err != nil {
		return nil, err
	}
	metaRaw, _, err := files.read(memlayout.MetaFile)
	if err != nil {
		return nil, s.unavailable(err)
	}
	meta, _ := memlayout.ParseMeta([]byte(metaRaw)) // an unreadable meta.json reads as version 0
	if reserveMeta {
		req.Reserved = count(metaBlock(metaMessage(files.agent, meta)))
	}
	if extra != nil {
		if req.Extra, err = extra(); err != nil {
			return nil, err
		}
	}
	if req.AlwaysLoad, err = s.alwaysLoad(files); err != nil {
		return nil, s.unavailable(err)
	}
	res, err := memread.Read(memread.Source{Read: files.read, List: files.list, Count: count}, req)
	var small *memread.BudgetTooSmallError
	if errors.As(err, &small) {
		return nil, small
	}
	if err != nil {
		return nil, s.unavailable(err)
	}
	r := &folderRead{res: res, meta: meta}
	if extra == nil {
		// A file cut to the budget (or wide mode's last decisions) is a
		// substring of the whole file, which the cache would keep alive
		// beyond the cost it counts: cache copies.
		for i := range res.Files {
			res.Files[i].Content = strings.Clone(res.Files[i].Content)
		}
		s.reads.Put(key, r, r.cost())
	}
	return r, nil
}
