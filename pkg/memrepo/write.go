package memrepo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/garden-bloom/memory/pkg/memrepo/internal/odb"
)

var (
	// ErrNoChanges means the changes would produce a tree identical to the
	// parent's; no commit is created and main is not touched.
	ErrNoChanges = errors.New("memrepo: commit would not change anything")
	// ErrFileNotFound means a file does not exist at the given commit (or
	// the path names a directory): returned by ReadFile, and by Commit for
	// a Delete of a missing file.
	ErrFileNotFound = errors.New("memrepo: file not found")
	// ErrInvalidCommit means a CommitRequest is malformed (zero parent, empty
	// message, an identity git would reject, ...). Path problems are
	// reported as ErrInvalidPath instead.
	ErrInvalidCommit = errors.New("memrepo: invalid commit request")
)

// Change is one file-level edit of a commit.
type Change struct {
	// Path is the file path relative to the repository root, '/'-separated;
	// see CheckPath for the rules.
	Path string
	// Content is the new file content (a regular, non-executable file
	// unless the existing file is executable). Ignored when Delete is set.
	// The commit keeps it, uncopied, as the new blob (and the object cache
	// hands it out to readers): it must not be modified after the call.
	Content []byte
	// Delete removes the file; directories left empty disappear with it.
	Delete bool
}

// TextChange is the Change that writes content to path, sharing content's
// bytes instead of copying them: a commit keeps a change's content
// unmodified (see Content), and a string's bytes never change either. The
// apply engine's files are strings, some of which (decisions.md) grow all
// an agent's life.
func TextChange(path, content string) Change {
	return Change{Path: path, Content: unsafe.Slice(unsafe.StringData(content), len(content))}
}

// Signature identifies the author or committer of a commit.
type Signature struct {
	Name, Email string
	When        time.Time
}

// CommitRequest describes one commit on main.
type CommitRequest struct {
	// Parent is the head the changes were computed against; the commit
	// only lands if main still points at it (compare-and-swap).
	Parent plumbing.Hash
	// Changes are applied in order, so a later change to the same path
	// wins. At least one must alter the tree.
	Changes []Change
	// Message is the commit message, e.g. "memory-update: <agentId> /
	// run_<id> / proposal_<id>". A trailing newline is added if missing,
	// as the git CLI does.
	Message string
	// Author defaults to DefaultAuthorName/DefaultAuthorEmail and the
	// current time for empty fields. A zero Committer copies Author;
	// otherwise its empty fields get the same defaults.
	Author, Committer Signature
}

// Commit applies req.Changes to the tree of req.Parent and, if main still
// points at req.Parent, makes the result the new head of main as exactly one
// commit. It returns the new commit's hash. It is CommitChain with a single
// request, and returns that request's errors unwrapped.
//
// Errors (test with errors.Is): ErrInvalidPath, ErrInvalidCommit,
// ErrFileNotFound (Delete of a missing file), ErrNoChanges, ErrHeadMoved
// (main is no longer req.Parent: nothing changed, rebuild and retry),
// ErrLocked (refs/heads/main.lock held for too long), ErrNoMainBranch.
//
// Durability and atomicity: see CommitChain. Once Commit returns
// successfully the commit is durable. In the one case where main has moved
// but the final directory fsync failed, Commit returns the new hash together
// with the error.
func (r *Repo) Commit(ctx context.Context, req CommitRequest) (plumbing.Hash, error) {
	hashes, err := r.CommitChain(ctx, req.Parent, []CommitRequest{req})
	var ce *ChainError
	if errors.As(err, &ce) {
		err = ce.Err
	}
	if len(hashes) == 1 {
		return hashes[0], err
	}
	return plumbing.ZeroHash, err
}

// ChainError reports the request of a CommitChain that could not be built
// (invalid, or changing nothing). Nothing was written; the caller may drop
// that request and retry the others. errors.Is sees the cause (ErrNoChanges,
// ErrInvalidPath, ...).
type ChainError struct {
	Index int // into the requests passed to CommitChain
	Err   error
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("memrepo: commit %d of the chain: %v", e.Index, e.Err)
}

func (e *ChainError) Unwrap() error { return e.Err }

// CommitChain commits reqs as a linear chain on top of parent, in order:
// reqs[0]'s commit has parent as its parent, reqs[i]'s has reqs[i-1]'s, and
// main ends at the last one. Each request is exactly one commit, with its own
// message and identities, and its changes applied to the tree left by the
// previous one (the requests' Parent fields are ignored). It returns the
// commits' hashes in request order.
//
// This is group commit: however many commits the chain holds, their objects
// go into one pack and the ref moves once, so the disk round trips (file
// creation, fsync) are paid once per chain instead of once per commit.
//
// The chain is all or nothing: main moves from parent straight to the last
// commit (readers never see the ones in between as head), or not at all.
// Errors: a request that cannot be built (ErrInvalidPath, ErrInvalidCommit,
// ErrFileNotFound, ErrNoChanges) is reported as a *ChainError naming it, and
// nothing is written. ErrHeadMoved, ErrLocked, ErrNoMainBranch and
// ErrInvalidCommit (no requests, zero parent) concern the whole chain.
//
// Durability and atomicity: CommitChain builds every tree and commit in
// memory first, then takes refs/heads/main.lock (git's own lock protocol)
// and checks main again, then writes the new objects as one pack: pack and
// index are fsynced, renamed into objects/pack and the directory is fsynced
// (see packWriter in internal/odb), while the new ref value is fsynced in
// the lock file. Only when all of that is on disk is the lock renamed over
// refs/heads/main (and refs/heads fsynced). A crash at any instant therefore leaves main at
// either parent or the last commit of the chain, with every object it needs
// present; at worst an unreferenced pack, temp files (tmp_pack_*, tmp_idx_*,
// removed by git gc) and a stale main.lock remain (see RecoverStaleLock).
// Once CommitChain returns successfully every commit of the chain is
// durable. The lock is held only for those few fsyncs, never while trees are
// being built. In the one case where main has moved but the final directory
// fsync failed, CommitChain returns the new hashes together with the error.
//
// Each call adds a pack: writers that commit continuously should call
// CompactPacks now and then (between commits) to merge them.
//
// Commits from one Repo are serialised by a mutex; commits from other
// processes (including `git push`) are serialised by the ref lock.
func (r *Repo) CommitChain(ctx context.Context, parent plumbing.Hash, reqs []CommitRequest) ([]plumbing.Hash, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if parent.IsZero() {
		return nil, fmt.Errorf("%w: zero parent (main always has a commit)", ErrInvalidCommit)
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%w: no commits in the chain", ErrInvalidCommit)
	}
	commits, err := checkRequests(reqs)
	if err != nil {
		return nil, err
	}

	r.writeMu.Lock()
	defer r.writeMu.Unlock()

	// Cheap early check: a stale parent fails before any object is built
	// or written. The authoritative check happens again under the ref lock.
	head, err := r.readMain()
	if err != nil {
		return nil, err
	}
	if head != parent {
		return nil, fmt.Errorf("%w: main is %s, parent was %s", ErrHeadMoved, head, parent)
	}
	objs, hashes, err := r.buildChain(parent, reqs, commits)
	if err != nil {
		return nil, err
	}

	// Last cancellation point (besides the lock wait): past the lock the
	// remaining work is a few fsyncs, and finishing beats leaving garbage.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return r.publish(ctx, parent, objs, hashes)
}

// checkRequests validates every request before anything is built and
// returns the commits to encode (without tree and parent).
func checkRequests(reqs []CommitRequest) ([]*object.Commit, error) {
	commits := make([]*object.Commit, len(reqs))
	for i := range reqs {
		c, err := reqs[i].commitObject()
		if err != nil {
			return nil, &ChainError{Index: i, Err: err}
		}
		for _, ch := range reqs[i].Changes {
			if err := CheckPath(ch.Path); err != nil {
				return nil, &ChainError{Index: i, Err: err}
			}
		}
		commits[i] = c
	}
	return commits, nil
}

// buildChain builds every commit of the chain in memory and returns all new
// objects (each once) and the commits' hashes.
func (r *Repo) buildChain(parent plumbing.Hash, reqs []CommitRequest, commits []*object.Commit) (*odb.ObjectSet, []plumbing.Hash, error) {
	pc, err := r.commitObject(parent)
	if err != nil {
		return nil, nil, err
	}
	objs := odb.NewObjectSet()
	hashes := make([]plumbing.Hash, len(reqs))
	prev, tree := parent, pc.TreeHash
	for i := range reqs {
		root, err := buildTree(r, objs, tree, reqs[i].Changes)
		if err != nil {
			return nil, nil, &ChainError{Index: i, Err: err}
		}
		if root == tree {
			return nil, nil, &ChainError{Index: i, Err: ErrNoChanges}
		}
		c := commits[i]
		c.TreeHash, c.ParentHashes = root, []plumbing.Hash{prev}
		co := &plumbing.MemoryObject{}
		if err := c.Encode(co); err != nil {
			return nil, nil, fmt.Errorf("memrepo: encode commit: %w", err)
		}
		hashes[i] = objs.Add(co)
		prev, tree = hashes[i], root
	}
	return objs, hashes, nil
}

// buildTree applies changes to tree root and returns the new root's hash,
// adding the new blobs and trees to objs.
func buildTree(r *Repo, objs *odb.ObjectSet, root plumbing.Hash, changes []Change) (plumbing.Hash, error) {
	b, err := newTreeBuilder(r, objs, root)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for _, c := range changes {
		if c.Delete {
			err = b.remove(c.Path)
		} else {
			err = b.put(c.Path, c.Content)
		}
		if err != nil {
			return plumbing.ZeroHash, err
		}
	}
	return b.build()
}

// publish makes the chain durable and moves main from parent to its last
// commit (see CommitChain for the protocol). The caller holds writeMu.
func (r *Repo) publish(ctx context.Context, parent plumbing.Hash, objs *odb.ObjectSet, hashes []plumbing.Hash) ([]plumbing.Hash, error) {
	lock, err := r.lockMain(ctx, parent)
	if err != nil {
		return nil, err
	}
	defer lock.release()
	// The lock file's content is invisible until the rename, so it can be
	// fsynced concurrently with the objects.
	lockErr := make(chan error, 1)
	go func() { lockErr <- lock.write(hashes[len(hashes)-1]) }()
	objErr := r.objs.WriteNew(objs)
	if err := errors.Join(objErr, <-lockErr); err != nil {
		return nil, err
	}
	r.objs.Warm(objs) // the next commit reads these trees back as its parent
	if err := lock.commit(); err != nil {
		if lock.renamed {
			return hashes, err // main moved; only its durability is in doubt
		}
		return nil, err
	}
	return hashes, nil
}

// commitObject validates the request's metadata and returns the commit to
// encode (without tree and parent). Identities are checked against what
// `git fsck --strict` accepts, since go-git would encode anything.
func (req *CommitRequest) commitObject() (*object.Commit, error) {
	if strings.TrimSpace(req.Message) == "" {
		return nil, fmt.Errorf("%w: empty message", ErrInvalidCommit)
	}
	if strings.IndexByte(req.Message, 0) >= 0 {
		return nil, fmt.Errorf("%w: message contains NUL", ErrInvalidCommit)
	}
	msg := req.Message
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	now := time.Now()
	author := fillSignature(req.Author, now)
	committer := author
	if req.Committer != (Signature{}) {
		committer = fillSignature(req.Committer, now)
	}
	for _, s := range []object.Signature{author, committer} {
		if strings.ContainsAny(s.Name, "<>\n\x00") || strings.ContainsAny(s.Email, "<>\n\x00") {
			return nil, fmt.Errorf("%w: identity %q <%q> contains '<', '>', newline or NUL", ErrInvalidCommit, s.Name, s.Email)
		}
		if s.When.Unix() < 0 {
			return nil, fmt.Errorf("%w: time %v is before 1970", ErrInvalidCommit, s.When)
		}
	}
	return &object.Commit{Author: author, Committer: committer, Message: msg}, nil
}

func fillSignature(s Signature, now time.Time) object.Signature {
	if s.Name == "" {
		s.Name = DefaultAuthorName
	}
	if s.Email == "" {
		s.Email = DefaultAuthorEmail
	}
	if s.When.IsZero() {
		s.When = now
	}
	return object.Signature{Name: s.Name, Email: s.Email, When: s.When}
}

// treeBuilder applies changes to a tree, loading only the trees on the
// changed paths (path-by-path, never a whole recursive tree) and producing
// the new blob and tree objects, all in memory.
type treeBuilder struct {
	repo *Repo // reads (and caches) the parent's trees
	// objects receives the new blobs and trees; trees built earlier in the
	// same chain are read back from it.
	objects *odb.ObjectSet
	root    *treeNode
}

// treeNode is a tree on a changed path. entries is a private copy of the
// tree's entries; children holds the loaded subtrees (only Dir entries).
type treeNode struct {
	orig     plumbing.Hash // hash the tree had in the parent (zero if new)
	entries  []object.TreeEntry
	children map[string]*treeNode
}

func newTreeBuilder(repo *Repo, objects *odb.ObjectSet, root plumbing.Hash) (*treeBuilder, error) {
	b := &treeBuilder{repo: repo, objects: objects}
	n, err := b.load(root)
	if err != nil {
		return nil, err
	}
	b.root = n
	return b, nil
}

func (b *treeBuilder) load(h plumbing.Hash) (*treeNode, error) {
	if entries, ok := b.objects.Tree(h); ok {
		// Built earlier in this chain, not in the store yet.
		return &treeNode{orig: h, entries: slices.Clone(entries)}, nil
	}
	t, err := b.repo.tree(h) // shared, decoded once: copy before modifying
	if err != nil {
		return nil, err
	}
	return &treeNode{orig: h, entries: slices.Clone(t.all())}, nil
}

func (n *treeNode) find(name string) int {
	for i := range n.entries {
		if n.entries[i].Name == name {
			return i
		}
	}
	return -1
}

// dir returns the node for the directory named by segs, loading it (and
// creating missing directories when create is set). It returns nil, nil if
// a directory is missing and create is false.
func (b *treeBuilder) dir(segs []string, create bool, path string) (*treeNode, error) {
	n := b.root
	for i, seg := range segs {
		if c, ok := n.children[seg]; ok {
			n = c
			continue
		}
		var child *treeNode
		switch j := n.find(seg); {
		case j < 0:
			if !create {
				return nil, nil
			}
			n.entries = append(n.entries, object.TreeEntry{Name: seg, Mode: filemode.Dir})
			child = &treeNode{}
		case n.entries[j].Mode != filemode.Dir:
			if !create {
				return nil, nil
			}
			return nil, fmt.Errorf("%w %q: %s is a file, not a directory",
				ErrInvalidPath, path, strings.Join(segs[:i+1], "/"))
		default:
			var err error
			if child, err = b.load(n.entries[j].Hash); err != nil {
				return nil, err
			}
		}
		if n.children == nil {
			n.children = map[string]*treeNode{}
		}
		n.children[seg] = child
		n = child
	}
	return n, nil
}

func (b *treeBuilder) put(path string, content []byte) error {
	segs := strings.Split(path, "/")
	n, err := b.dir(segs[:len(segs)-1], true, path)
	if err != nil {
		return err
	}
	blob := odb.NewObject(plumbing.BlobObject, content) // see Change.Content
	h := blob.Hash()

	name := segs[len(segs)-1]
	i := n.find(name)
	if i < 0 {
		n.entries = append(n.entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h})
		b.add(blob)
		return nil
	}
	e := &n.entries[i]
	switch e.Mode {
	case filemode.Dir:
		return fmt.Errorf("%w %q: is a directory", ErrInvalidPath, path)
	case filemode.Submodule:
		return fmt.Errorf("%w %q: is a submodule", ErrInvalidPath, path)
	case filemode.Executable:
		// Keep the bit a person may have set with git.
	default:
		e.Mode = filemode.Regular // also turns a symlink into a file
	}
	if e.Hash != h {
		e.Hash = h
		b.add(blob) // an unchanged file needs no new object
	}
	return nil
}

func (b *treeBuilder) remove(path string) error {
	segs := strings.Split(path, "/")
	n, err := b.dir(segs[:len(segs)-1], false, path)
	if err != nil {
		return err
	}
	i := -1
	if n != nil {
		i = n.find(segs[len(segs)-1])
	}
	if i < 0 {
		return fmt.Errorf("%w: cannot delete %q", ErrFileNotFound, path)
	}
	switch n.entries[i].Mode {
	case filemode.Dir, filemode.Submodule:
		return fmt.Errorf("%w: cannot delete %q: not a file", ErrFileNotFound, path)
	}
	n.entries = append(n.entries[:i], n.entries[i+1:]...)
	return nil
}

// add queues a new object for writing (once per hash) and returns its hash.
func (b *treeBuilder) add(o plumbing.EncodedObject) plumbing.Hash { return b.objects.Add(o) }

// build encodes every changed tree bottom-up and returns the new root tree
// hash. Directories left empty are pruned (git cannot represent them).
func (b *treeBuilder) build() (plumbing.Hash, error) {
	h, _, err := b.encode(b.root, true)
	return h, err
}

func (b *treeBuilder) encode(n *treeNode, isRoot bool) (plumbing.Hash, bool, error) {
	for name, c := range n.children {
		h, empty, err := b.encode(c, false)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		i := n.find(name)
		if empty {
			n.entries = append(n.entries[:i], n.entries[i+1:]...)
		} else {
			n.entries[i].Hash = h
		}
	}
	if len(n.entries) == 0 && !isRoot {
		return plumbing.ZeroHash, true, nil
	}
	if !slices.IsSortedFunc(n.entries, compareTreeEntries) { // only new entries are out of place
		slices.SortFunc(n.entries, compareTreeEntries)
	}
	content, err := encodeTreeContent(n.entries)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	o := odb.NewObject(plumbing.TreeObject, content)
	if o.Hash() == n.orig {
		return n.orig, false, nil // unchanged: nothing to write
	}
	h := b.add(o)
	b.objects.AddTree(h, n.orig, n.entries, content) // the node is done with its entries
	return h, false, nil
}

// compareTreeEntries orders tree entries as git does (gitNameOrder),
// without go-git's TreeEntrySorter building "name/" strings for every
// comparison.
func compareTreeEntries(a, b object.TreeEntry) int {
	return gitNameOrder(a.Name, a.Mode == filemode.Dir, b.Name, b.Mode == filemode.Dir)
}

// encodeTree encodes sorted entries as a git tree object: "<octal mode>
// <name>\0<hash>" each, as go-git's Tree.Encode writes them, without its
// formatted print per entry.
func encodeTree(entries []object.TreeEntry) (plumbing.EncodedObject, error) {
	buf, err := encodeTreeContent(entries)
	if err != nil {
		return nil, err
	}
	return odb.NewObject(plumbing.TreeObject, buf), nil
}

// encodeTreeContent returns the content of the tree object of entries.
func encodeTreeContent(entries []object.TreeEntry) ([]byte, error) {
	size := 0
	for _, e := range entries {
		size += len(e.Name) + 8 + len(e.Hash)
	}
	buf := make([]byte, 0, size)
	for _, e := range entries {
		if strings.IndexByte(e.Name, 0) >= 0 {
			return nil, fmt.Errorf("memrepo: encode tree: malformed file name %q", e.Name)
		}
		buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
		buf = append(buf, ' ')
		buf = append(buf, e.Name...)
		buf = append(buf, 0)
		buf = append(buf, e.Hash[:]...)
	}
	return buf, nil
}
