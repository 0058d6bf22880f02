// Package revision resolves the revisions requests name (`at`, `from`, `to`,
// a snapshot's commit) to commits of main, the same way for every service:
// a read as of a time and a read as of the commit that time names must agree
// across context assembly, search and the rest.
//
// A revision is one of
//
//   - "" — main's head (Resolve only);
//   - an RFC 3339 time — the newest first-parent commit of main made at or
//     before it (Resolve only). A time before main's first commit names no
//     commit (ErrNotFound); a caller whose range may start before history
//     began (temporal reads) may fall back to the whole history for a time,
//     never for a commit-ish that names nothing;
//   - a commit-ish memrepo.Repo.ResolveRevision knows: HEAD, main, a full or
//     abbreviated sha, with ~N / ^N suffixes.
//
// Nothing else resolves: an option-like string such as "--upload-pack=…"
// is ErrNotFound, and no revision ever reaches a git command line.
package revision

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/garden-bloom/memory/pkg/memrepo"
)

// ErrNotFound means a revision names no commit of main. Other errors of
// Resolve and Commit are the repository's (callers answer "unavailable").
var ErrNotFound = errors.New("revision not found")

// Time returns the time an RFC 3339 revision names; ok is false for any
// other revision.
func Time(rev string) (t time.Time, ok bool) {
	t, err := time.Parse(time.RFC3339, rev)
	return t, err == nil
}

// Resolve turns rev ("", an RFC 3339 time or a commit-ish) into a commit.
func Resolve(ctx context.Context, repo *memrepo.Repo, rev string) (*object.Commit, error) {
	if rev == "" {
		head, err := repo.Head(ctx)
		if err != nil {
			return nil, err
		}
		return repo.CommitInfo(ctx, head)
	}
	if t, ok := Time(rev); ok {
		return atTime(ctx, repo, t)
	}
	return Commit(ctx, repo, rev)
}

// Commit turns a commit-ish (not "", not a time) into a commit.
func Commit(ctx context.Context, repo *memrepo.Repo, rev string) (*object.Commit, error) {
	if strings.HasPrefix(rev, "-") {
		// memrepo knows no such revision either; refusing it here keeps
		// the rule whatever memrepo comes to accept.
		return nil, ErrNotFound
	}
	h, err := repo.ResolveRevision(ctx, rev)
	if errors.Is(err, memrepo.ErrRevisionNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return repo.CommitInfo(ctx, h)
}

// atTime is the newest first-parent commit of main made at or before t.
func atTime(ctx context.Context, repo *memrepo.Repo, t time.Time) (*object.Commit, error) {
	head, err := repo.Head(ctx)
	if err != nil {
		return nil, err
	}
	var found *object.Commit
	err = repo.Walk(ctx, head, func(c *object.Commit) error {
		if !c.Committer.When.After(t) {
			found = c
			return memrepo.ErrStopWalk
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, ErrNotFound
	}
	return found, nil
}
