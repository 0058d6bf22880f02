package memrepo

import (
	"context"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
)

// DiffCommits lists the files that differ between commits a and b (added,
// changed or deleted), sorted. A zero a means the empty tree, so every file
// of b is listed. Unchanged subtrees are skipped by hash, so the cost follows
// the size of the change, not of the repository.
func (r *Repo) DiffCommits(ctx context.Context, a, b plumbing.Hash) ([]string, error) {
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
	set := map[string]bool{}
	if err := r.diffTrees(ctx, "", treeA, cb.TreeHash, set); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}
