package searchindex

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/fulltext"
	"github.com/garden-bloom/memory/pkg/memrepo"
	"github.com/garden-bloom/memory/pkg/revision"
)

// Search as of a past commit (SearchRequest.at). The index holds only the
// head, so such a search indexes the agent's searchable files at that
// commit into a transient in-memory index — the same chunker, analyzer,
// documents and BM25 as the main index — and searches that. Its scores
// are computed over those files alone (the main index's are over every
// file it holds), and every hit's commit is the requested one, whose tree
// holds the chunk's lines.

// maxAtBytes bounds the text one at-search indexes: an agent's memory is
// far smaller (Layer 1 is a few thousand tokens), but its runs and
// timeline grow without bound.
const maxAtBytes = 32 << 20

// atSearches bounds the at-searches building an index at once: each costs
// a core while it analyses the files.
var atSearches = make(chan struct{}, 2)

// agentFilesAt reads and chunks agent's searchable files at commit.
func agentFilesAt(ctx context.Context, repo *memrepo.Repo, commit plumbing.Hash, agent string) ([]fulltext.File, error) {
	var out []fulltext.File
	total := 0
	for _, dir := range []string{"memory/" + agent, "logic/" + agent} {
		paths, err := repo.ListFiles(ctx, commit, dir)
		if err != nil {
			return nil, err
		}
		for _, path := range paths {
			a, f, ok := repoFile(path)
			if !ok || a != agent {
				continue
			}
			text, _, err := repo.ReadTextBlob(ctx, commit, path)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", path, err)
			}
			if total += len(text); total > maxAtBytes {
				return nil, errAtTooLarge
			}
			out = append(out, chunkFile(path, agent, f.Layer, string(f.Kind), commit.String(), text))
		}
	}
	return out, nil
}

var errAtTooLarge = errors.New("too much to search at a past commit")

// searchAt runs q (its AgentID set) against agent's files at commit.
func (s *Service) searchAt(ctx context.Context, repo *memrepo.Repo, commit plumbing.Hash, q fulltext.Query) (*fulltext.Result, error) {
	select {
	case atSearches <- struct{}{}:
		defer func() { <-atSearches }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	files, err := agentFilesAt(ctx, repo, commit, q.AgentID)
	if err != nil {
		return nil, err
	}
	ix, err := fulltext.OpenMemory()
	if err != nil {
		return nil, err
	}
	defer func() { _ = ix.Close() }() // in memory: nothing to lose
	if err := ix.Apply(ctx, fulltext.Batch{Upserts: files, Commit: commit.String()}); err != nil {
		return nil, err
	}
	return ix.Search(ctx, q)
}

// atError maps the errors of an at-search to API errors (nil: not one).
func atError(at string, err error) error {
	switch {
	case errors.Is(err, revision.ErrNotFound):
		return apierr.RevisionNotFound("at", at)
	case errors.Is(err, errAtTooLarge):
		return apierr.New(codes.ResourceExhausted, memoryv1.ErrorReason_ERROR_REASON_REQUEST_TOO_LARGE,
			fmt.Sprintf("the agent's files at %q are over %d MiB: too much to search at a past commit", at, maxAtBytes>>20), map[string]string{"at": at})
	}
	return nil
}
