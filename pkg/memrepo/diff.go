package memrepo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/garden-bloom/memory/pkg/memrepo/internal/odb"
)

// FileChange is a path that differs between two commits, with what it is
// in the newer one: Blob is zero when the path is no file there (deleted,
// or now a directory or submodule).
type FileChange struct {
	Path string
	Blob plumbing.Hash
}

// Deleted reports whether the path is no file in the newer commit.
func (c FileChange) Deleted() bool { return c.Blob.IsZero() }

// DiffCommits lists the files that differ between commits a and b (added,
// changed or deleted), sorted. A zero a means the empty tree, so every file
// of b is listed. Unchanged subtrees are skipped by hash, so the cost follows
// the size of the change, not of the repository.
func (r *Repo) DiffCommits(ctx context.Context, a, b plumbing.Hash) ([]string, error) {
	changes, err := r.DiffFiles(ctx, a, b)
	if err != nil {
		return nil, err
	}
	return Paths(changes), nil
}

// Paths lists the changes' paths, in their order.
func Paths(changes []FileChange) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.Path
	}
	return out
}

// DiffFiles is DiffCommits with each file's blob in b, so callers read the
// new contents with ReadBlob instead of looking every path up again (which
// decodes memory/'s tree, one entry per agent, for every commit).
func (r *Repo) DiffFiles(ctx context.Context, a, b plumbing.Hash) ([]FileChange, error) {
	var treeA plumbing.Hash
	if !a.IsZero() {
		ca, err := r.commitObject(a)
		if err != nil {
			return nil, err
		}
		treeA = ca.TreeHash
	}
	cb, err := r.commitObject(b)
	if err != nil {
		return nil, err
	}
	set := map[string]plumbing.Hash{}
	if err := r.diffTrees(ctx, "", treeA, cb.TreeHash, set); err != nil {
		return nil, err
	}
	out := make([]FileChange, 0, len(set))
	for p, h := range set {
		out = append(out, FileChange{Path: p, Blob: h})
	}
	slices.SortFunc(out, func(x, y FileChange) int { return strings.Compare(x.Path, y.Path) })
	return out, nil
}

// ChangedFileBlobs is ChangedFiles with each file's blob (see DiffFiles).
func (r *Repo) ChangedFileBlobs(ctx context.Context, h plumbing.Hash) ([]FileChange, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := r.commitObject(h)
	if err != nil {
		return nil, err
	}
	parent := plumbing.ZeroHash
	if len(c.ParentHashes) > 0 {
		parent = c.ParentHashes[0]
	}
	return r.DiffFiles(ctx, parent, h)
}

// ReadBlob returns the content of blob h (a copy: callers may keep or
// change it). An unknown hash, or one that is not a blob, is
// ErrFileNotFound.
func (r *Repo) ReadBlob(ctx context.Context, h plumbing.Hash) ([]byte, error) {
	o, err := r.blobObject(ctx, h)
	if err != nil {
		return nil, err
	}
	return odb.CopyContent(o)
}

// ReadBlobText is ReadBlob for callers that want a string: one copy of a
// packed blob, where string(ReadBlob) made two. The commit followers read
// every changed file this way.
func (r *Repo) ReadBlobText(ctx context.Context, h plumbing.Hash) (string, error) {
	o, err := r.blobObject(ctx, h)
	if err != nil {
		return "", err
	}
	return odb.TextContent(o)
}

// blobObject returns the (shared, immutable) object of blob h.
func (r *Repo) blobObject(ctx context.Context, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o, err := r.objs.Get(plumbing.BlobObject, h)
	if err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return nil, fmt.Errorf("%w: blob %s", ErrFileNotFound, h)
		}
		return nil, fmt.Errorf("memrepo: read blob %s: %w", h, err)
	}
	return o, nil
}

// isFileMode reports whether a raw tree entry mode is a file (regular,
// executable or symlink), which ReadFile reads; submodules are not.
func isFileMode(mode []byte) bool {
	m, err := filemode.New(string(mode))
	return err == nil && m.IsFile()
}
