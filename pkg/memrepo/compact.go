package memrepo

import "context"

// Every Commit and CommitChain adds a pack, and every lookup that misses the
// cache probes each pack's index, so packs must not pile up. Merging them is
// the object database's business (internal/odb/compact.go); CompactPacks is
// its entry point and keeps two merges from running at once.

// CompactPacks merges small packs of the object database into one when
// there are at least odb.CompactMinPacks (16) of them. Writers that commit
// continuously (the proposal-apply engine) call it after their commits,
// beside the next ones; it returns quickly when there is nothing to do.
//
// It may run concurrently with commits. A merge only adds a pack of objects
// that are stored already and then deletes the packs it copied, so every
// object is present at every instant, for a commit under way too: one that
// found an object in a pack the merge then deletes finds it in the merged
// pack (a pack that vanishes before the commit freshens it just makes the
// commit write the object again).
//
// Only packs without OFS_DELTA entries are merged (memrepo's deltas are
// REF_DELTAs, which name their base by hash and so survive being copied
// into another pack with it), and only ones git is not using specially
// (no .keep, .promisor, .mtimes or .bitmap), so packs from git gc or a
// push are left alone. Crash safety: the merged pack is durable (fsynced,
// renamed, directory fsynced) before any old pack is deleted, so every
// object stays present at every instant; a crash in between leaves
// duplicates, which the next merge drops.
func (r *Repo) CompactPacks(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.compactMu.Lock()
	defer r.compactMu.Unlock()
	return r.objs.Compact()
}
