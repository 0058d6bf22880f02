package memrepo

import (
	"context"

	"github.com/go-git/go-git/v5/plumbing"
)

// TreeHash returns the hash of the tree or blob at path in commit, or the
// zero hash when nothing is there. Equal hashes mean identical content, so
// callers compare whole folders without reading files.
func (r *Repo) TreeHash(ctx context.Context, commit plumbing.Hash, path string) (plumbing.Hash, error) {
	if err := ctx.Err(); err != nil {
		return plumbing.ZeroHash, err
	}
	c, err := r.commitObject(commit)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if path == "" {
		return c.TreeHash, nil
	}
	entry, ok, err := r.lookupPath(c.TreeHash, path)
	if err != nil || !ok {
		return plumbing.ZeroHash, err
	}
	return entry.Hash, nil
}
