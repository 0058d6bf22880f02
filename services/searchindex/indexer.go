package searchindex

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/chunker"
	"github.com/garden-bloom/memory/pkg/fulltext"
	"github.com/garden-bloom/memory/pkg/memlayout"
	"github.com/garden-bloom/memory/pkg/memrepo"
)

// batchFiles bounds how many files one index batch carries, so the first
// index of a large repository makes progress in steps.
const batchFiles = 500

// maxChunkChars bounds a chunk. Bullets and paragraphs are far shorter; the
// bound matters for long paragraphs (a source's abstract), which retrieve
// better whole than cut in pieces.
const maxChunkChars = 4000

// SourcesPrefix is where agents' sources live in the object store.
const SourcesPrefix = "agents/"

// repoFile says whether a repository path is indexed, and as what.
func repoFile(path string) (agent string, f memlayout.File, ok bool) {
	parts := strings.SplitN(path, "/", 3)
	if len(parts) != 3 {
		return "", memlayout.File{}, false
	}
	rel := parts[2]
	switch parts[0] {
	case "memory":
	case "logic":
		rel = "logic/" + rel
	default:
		return "", memlayout.File{}, false
	}
	f, err := memlayout.Resolve(parts[1], rel)
	if err != nil {
		return "", memlayout.File{}, false
	}
	switch f.Kind {
	case memlayout.KindSnapshot, memlayout.KindFacts, memlayout.KindOpenLoops,
		memlayout.KindDecisions, memlayout.KindTimeline, memlayout.KindRun, memlayout.KindLogicPseudo:
		return parts[1], f, true
	}
	return "", memlayout.File{}, false // meta, policy, changelog, JSON logic: not prose
}

// Indexed reports whether the repository file at path is indexed (the
// others — meta, policy, changelog, JSON logic — are not prose).
func Indexed(path string) bool {
	_, _, ok := repoFile(path)
	return ok
}

// sourceFile says whether an object key is an agent's Markdown source.
func sourceFile(key string) (agent string, ok bool) {
	parts := strings.SplitN(key, "/", 4)
	if len(parts) != 4 || parts[0] != "agents" || parts[2] != "sources" || !strings.HasSuffix(key, ".md") {
		return "", false
	}
	if !memlayout.ValidAgentID(parts[1]) {
		return "", false
	}
	return parts[1], true
}

func chunkFile(path, agent string, layer int, kind, version, content string) fulltext.File {
	return fulltext.File{
		Path: path, AgentID: agent, Layer: layer, Kind: kind, Version: version,
		Chunks: chunker.Split(content, chunker.Options{MaxChars: maxChunkChars}),
	}
}

// applier is what batches go to: the live index or a rebuild.
type applier interface {
	Apply(ctx context.Context, b fulltext.Batch) error
}

// indexCommits brings an index from commit `from` (zero: empty) to `to`,
// re-reading only the files that differ. The last batch records `to`; the
// ones before record how far the pass got, and a pass resumed with after
// set skips the paths up to it (they are indexed as of `to` already).
func indexCommits(ctx context.Context, repo *memrepo.Repo, dst applier, from, to plumbing.Hash, after string) (int, error) {
	changes, err := repo.DiffFiles(ctx, from, to)
	if err != nil {
		return 0, err
	}
	var batch fulltext.Batch
	done := after
	flush := func(final bool) error {
		if final {
			batch.Commit = to.String()
		} else {
			batch.Pass = &fulltext.Pass{To: to.String(), Done: done}
		}
		if err := dst.Apply(ctx, batch); err != nil {
			return err
		}
		batch = fulltext.Batch{}
		return nil
	}
	n := 0
	for _, ch := range changes {
		path := ch.Path
		agent, f, ok := repoFile(path)
		if !ok || path <= after {
			continue
		}
		if ch.Deleted() {
			batch.Deletes = append(batch.Deletes, path)
		} else {
			text, err := repo.ReadBlobText(ctx, ch.Blob)
			if err != nil {
				return n, fmt.Errorf("read %s: %w", path, err)
			}
			batch.Upserts = append(batch.Upserts, chunkFile(path, agent, f.Layer, string(f.Kind), to.String(), text))
		}
		n++
		done = path // paths are sorted
		if len(batch.Upserts)+len(batch.Deletes) >= batchFiles {
			if err := flush(false); err != nil {
				return n, err
			}
		}
	}
	return n, flush(true)
}

// indexSources reconciles the index with the agents' sources in the object
// store: new or changed objects (by ETag) are indexed, vanished ones removed.
func indexSources(ctx context.Context, blobs blob.Store, dst applier, indexed map[string]string) (int, error) {
	seen := map[string]bool{}
	var batch fulltext.Batch
	n := 0
	// flush applies what is pending: in batchFiles pieces, because one
	// batch of every source (20,000 at 10,000 agents) held gigabytes of
	// analysis in memory at once.
	flush := func() error {
		if len(batch.Upserts)+len(batch.Deletes) == 0 {
			return nil
		}
		n += len(batch.Upserts) + len(batch.Deletes)
		err := dst.Apply(ctx, batch)
		batch = fulltext.Batch{}
		return err
	}
	for info, err := range blobs.List(ctx, SourcesPrefix) {
		if err != nil {
			return 0, err
		}
		agent, ok := sourceFile(info.Key)
		if !ok {
			continue
		}
		seen[info.Key] = true
		if indexed[info.Key] == info.ETag {
			continue
		}
		data, got, err := blob.GetBytes(ctx, blobs, info.Key)
		if errors.Is(err, blob.ErrNotFound) {
			continue // deleted between list and get: the next pass removes it
		}
		if err != nil {
			return 0, err
		}
		batch.Upserts = append(batch.Upserts, chunkFile(info.Key, agent, 0, "source", got.ETag, string(data)))
		if len(batch.Upserts) >= batchFiles {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	for path := range indexed {
		if strings.HasPrefix(path, SourcesPrefix) && !seen[path] {
			batch.Deletes = append(batch.Deletes, path)
		}
	}
	err := flush()
	return n, err
}
