package memrepo

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/garden-bloom/memory/pkg/memrepo/internal/odb"
)

var (
	// ErrRevisionNotFound means a revision or commit hash does not name a
	// commit in the repository (unknown, ambiguous, not a commit, or
	// walking past the root with ~N).
	ErrRevisionNotFound = errors.New("memrepo: revision not found")
	// ErrStopWalk may be returned by a Walk callback to end the walk early;
	// Walk then returns nil.
	ErrStopWalk = errors.New("memrepo: stop walk")
)

// The read side goes through odb.Store (see internal/odb) rather than
// go-git's storage so that it is safe for concurrent use and sees objects
// the git binary packs or pushes after the Repo was opened. Refs are read
// from disk on every call.

// commitObject loads and decodes commit h. The result is backed by r.objs, so
// its Tree()/Parents() methods work and are goroutine-safe.
// The result is shared through a cache: callers must not modify it.
func (r *Repo) commitObject(h plumbing.Hash) (*object.Commit, error) {
	if c, ok := r.commits.Get(h); ok {
		return c, nil
	}
	o, err := r.objs.Get(plumbing.CommitObject, h)
	if err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return nil, fmt.Errorf("%w: no commit %s: %w", ErrRevisionNotFound, h, err)
		}
		return nil, err
	}
	c, err := object.DecodeCommit(r.objs, o)
	if err != nil {
		return nil, fmt.Errorf("memrepo: decode commit %s: %w", h, err)
	}
	r.commits.Put(h, c, int64(256+len(c.Message)))
	return c, nil
}

// treeEntries returns the entries of tree h (none for the zero hash, which
// stands for "no tree", e.g. the parent of a root commit). The slice is
// shared: callers must not modify it.
func (r *Repo) treeEntries(h plumbing.Hash) ([]object.TreeEntry, error) {
	t, err := r.tree(h)
	if err != nil || t == nil {
		return nil, err
	}
	return t.entries, nil
}

// lookupPath walks from root tree to the entry for path, one tree per
// segment. It returns ok=false if some segment is missing or a non-final
// segment is not a directory.
func (r *Repo) lookupPath(root plumbing.Hash, path string) (object.TreeEntry, bool, error) {
	cur := object.TreeEntry{Mode: filemode.Dir, Hash: root}
	for seg := range strings.SplitSeq(path, "/") {
		if cur.Mode != filemode.Dir {
			return object.TreeEntry{}, false, nil
		}
		t, err := r.tree(cur.Hash)
		if err != nil {
			return object.TreeEntry{}, false, err
		}
		if t == nil {
			return object.TreeEntry{}, false, nil
		}
		var found bool
		if cur, found = t.find(seg); !found {
			return object.TreeEntry{}, false, nil
		}
	}
	return cur, true, nil
}

// ReadFile returns the content of the file at path in commit. It fails with
// ErrFileNotFound if there is no such file (a directory is not a file),
// ErrInvalidPath for a malformed path and ErrRevisionNotFound for an unknown
// commit. A symlink's content is its target, as in git.
func (r *Repo) ReadFile(ctx context.Context, commit plumbing.Hash, path string) ([]byte, error) {
	o, h, err := r.fileObject(ctx, commit, path)
	if err != nil {
		return nil, err
	}
	return fileContent(o, h, path)
}

// ReadTextBlob is ReadFile for callers that want a string, with the file's
// blob hash, which names its content (callers cache what they derive from a
// file by it). It copies a packed file once, where string(ReadFile) copies
// it twice: reads of cold agents allocate little else.
func (r *Repo) ReadTextBlob(ctx context.Context, commit plumbing.Hash, path string) (string, plumbing.Hash, error) {
	o, h, err := r.fileObject(ctx, commit, path)
	if err != nil {
		return "", plumbing.ZeroHash, err
	}
	text, err := odb.TextContent(o)
	if err != nil {
		return "", plumbing.ZeroHash, blobError(h, path, err)
	}
	return text, h, nil
}

// fileContent is odb.CopyContent for the blob h of the file at path.
func fileContent(o plumbing.EncodedObject, h plumbing.Hash, path string) ([]byte, error) {
	buf, err := odb.CopyContent(o)
	if err != nil {
		return nil, blobError(h, path, err)
	}
	return buf, nil
}

// blobError says which file's blob could not be read.
func blobError(h plumbing.Hash, path string, err error) error {
	return fmt.Errorf("memrepo: read blob %s (%s): %w", h, path, err)
}

// fileObject returns the (shared, immutable) blob object of the file at
// path in commit, and its hash.
func (r *Repo) fileObject(ctx context.Context, commit plumbing.Hash, path string) (plumbing.EncodedObject, plumbing.Hash, error) {
	if err := ctx.Err(); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	if err := CheckPath(path); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	c, err := r.commitObject(commit)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	e, ok, err := r.lookupPath(c.TreeHash, path)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	if !ok || !e.Mode.IsFile() {
		return nil, plumbing.ZeroHash, fmt.Errorf("%w: %s at %s", ErrFileNotFound, path, commit)
	}
	o, err := r.objs.Get(plumbing.BlobObject, e.Hash)
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("memrepo: read blob %s (%s): %w", e.Hash, path, err)
	}
	return o, e.Hash, nil
}

// ListFiles returns every file under dir in commit, recursively, as sorted
// repository-relative paths (e.g. "memory/agent-1/facts.md"). dir "" or "."
// means the whole repository; a trailing '/' is accepted. A directory that
// does not exist yields an empty list (a new agent simply has no files); a
// dir that names a file is ErrInvalidPath. Submodule entries are skipped.
func (r *Repo) ListFiles(ctx context.Context, commit plumbing.Hash, dir string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir = strings.TrimSuffix(dir, "/")
	if dir == "." {
		dir = ""
	}
	if dir != "" {
		if err := CheckPath(dir); err != nil {
			return nil, err
		}
	}
	c, err := r.commitObject(commit)
	if err != nil {
		return nil, err
	}
	tree := c.TreeHash
	prefix := ""
	if dir != "" {
		e, ok, err := r.lookupPath(c.TreeHash, dir)
		if err != nil {
			return nil, err
		}
		if !ok {
			return []string{}, nil
		}
		if e.Mode != filemode.Dir {
			return nil, fmt.Errorf("%w %q: is a file, not a directory", ErrInvalidPath, dir)
		}
		tree, prefix = e.Hash, dir+"/"
	}
	out := []string{}
	if err := r.collectFiles(ctx, tree, prefix, &out); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// collectFiles appends every file below tree to out, each prefixed.
func (r *Repo) collectFiles(ctx context.Context, tree plumbing.Hash, prefix string, out *[]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := r.treeEntries(tree)
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch {
		case e.Mode == filemode.Dir:
			if err := r.collectFiles(ctx, e.Hash, prefix+e.Name+"/", out); err != nil {
				return err
			}
		case e.Mode.IsFile():
			*out = append(*out, prefix+e.Name)
		}
	}
	return nil
}

// CommitInfo returns commit h (message, author, committer, parents, tree);
// it is shared: do not modify it.
// An unknown hash, or one that is not a commit, is ErrRevisionNotFound.
func (r *Repo) CommitInfo(ctx context.Context, h plumbing.Hash) (*object.Commit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return r.commitObject(h)
}

// ChangedFiles returns the sorted paths of the files that commit h added,
// modified (content or mode) or deleted relative to its first parent; for a
// root commit, every file. Unchanged subtrees are skipped by hash, so the
// cost is proportional to the size of the change, not of the repository.
func (r *Repo) ChangedFiles(ctx context.Context, h plumbing.Hash) ([]string, error) {
	changes, err := r.ChangedFileBlobs(ctx, h)
	if err != nil {
		return nil, err
	}
	return Paths(changes), nil
}

// diffTrees adds to set every file path that differs between trees a and b
// (either may be zero, meaning empty), with its blob in b (zero: no file in
// b).
//
// It walks the raw tree objects side by side (git keeps entries sorted)
// instead of decoding them: memory/ holds one entry per agent and changes
// with every commit, so at 10,000 agents decoding it into entries, names
// and an index for each commit was most of the cost of listing a commit's
// changes — the entity graph does that for every commit of history.
func (r *Repo) diffTrees(ctx context.Context, prefix string, a, b plumbing.Hash, set map[string]plumbing.Hash) error {
	if a == b {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ra, err := r.rawTree(a)
	if err != nil {
		return err
	}
	rb, err := r.rawTree(b)
	if err != nil {
		return err
	}
	// all adds every file at or below entry e, of a's side (no file in b
	// unless b's side says so) or of b's.
	all := func(e rawEntry, inB bool) error {
		if e.dir {
			sub := prefix + string(e.name) + "/"
			if inB {
				return r.diffTrees(ctx, sub, plumbing.ZeroHash, e.hash, set)
			}
			return r.diffTrees(ctx, sub, e.hash, plumbing.ZeroHash, set)
		}
		p := prefix + string(e.name)
		switch _, seen := set[p]; {
		case inB && isFileMode(e.mode):
			set[p] = e.hash
		case inB || !seen:
			set[p] = plumbing.ZeroHash
		}
		return nil
	}
	// Entries the two trees share byte for byte, at the start and at the
	// end, are skipped without being parsed: a commit changes one agent's
	// entry of memory/ (an entry per agent), and walking all the others was
	// most of what a diff cost.
	skip := sharedPrefixEntries(ra, rb)
	ta, tb := rawEntries{b: ra[skip:]}, rawEntries{b: rb[skip:]}
	restA, restB := ta.b, tb.b // from the current entries on
	ea, oka, err := ta.next()
	if err != nil {
		return fmt.Errorf("memrepo: tree %s: %w", a, err)
	}
	eb, okb, err := tb.next()
	if err != nil {
		return fmt.Errorf("memrepo: tree %s: %w", b, err)
	}
	for oka || okb {
		c := 0
		switch {
		case !oka:
			c = 1
		case !okb:
			c = -1
		default:
			c = compareEntries(ea, eb)
		}
		switch {
		case c < 0: // deleted on b's side
			err = all(ea, false)
		case c > 0: // added on b's side
			err = all(eb, true)
		case ea.hash == eb.hash && bytes.Equal(ea.mode, eb.mode):
		case ea.dir && eb.dir:
			err = r.diffTrees(ctx, prefix+string(eb.name)+"/", ea.hash, eb.hash, set)
		default: // a file changed
			if err = all(ea, false); err == nil {
				err = all(eb, true)
			}
		}
		if err != nil {
			return err
		}
		differs := c != 0 || ea.hash != eb.hash || !bytes.Equal(ea.mode, eb.mode)
		if c <= 0 {
			restA = ta.b
			if ea, oka, err = ta.next(); err != nil {
				return fmt.Errorf("memrepo: tree %s: %w", a, err)
			}
		}
		if c >= 0 {
			restB = tb.b
			if eb, okb, err = tb.next(); err != nil {
				return fmt.Errorf("memrepo: tree %s: %w", b, err)
			}
		}
		// Checked after a difference only, so the comparisons add up to
		// about one pass over the trees.
		if differs && bytes.Equal(restA, restB) {
			return nil
		}
	}
	return nil
}

// sharedPrefixEntries returns the length of the whole entries a and b (raw
// trees) start with byte for byte. Entry boundaries are found by the NUL
// after each name, without parsing the entries; a malformed tree stops the
// count early, and the walk that follows reports it.
func sharedPrefixEntries(a, b []byte) int {
	n := commonPrefix(a, b)
	end := 0
	for {
		nul := bytes.IndexByte(a[end:n], 0)
		if nul < 0 || end+nul+1+len(plumbing.ZeroHash) > n {
			return end
		}
		end += nul + 1 + len(plumbing.ZeroHash)
	}
}

// commonPrefix returns how many bytes a and b start with alike.
func commonPrefix(a, b []byte) int {
	const block = 64 // compared with bytes.Equal's vector loop
	n, i := min(len(a), len(b)), 0
	for i+block <= n && bytes.Equal(a[i:i+block], b[i:i+block]) {
		i += block
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// rawEntry is an entry of a raw tree object; name and mode point into it.
type rawEntry struct {
	mode, name []byte
	dir        bool
	hash       plumbing.Hash
}

// rawEntries iterates a raw tree object: "<mode> <name>\0<20-byte hash>"...
type rawEntries struct{ b []byte }

var errMalformedTree = errors.New("malformed tree object")

func (t *rawEntries) next() (rawEntry, bool, error) {
	if len(t.b) == 0 {
		return rawEntry{}, false, nil
	}
	sp := bytes.IndexByte(t.b, ' ')
	if sp <= 0 {
		return rawEntry{}, false, errMalformedTree
	}
	nul := bytes.IndexByte(t.b[sp+1:], 0)
	if nul <= 0 || len(t.b) < sp+1+nul+1+len(plumbing.ZeroHash) {
		return rawEntry{}, false, errMalformedTree
	}
	e := rawEntry{mode: t.b[:sp], name: t.b[sp+1 : sp+1+nul]}
	e.dir = string(e.mode) == "40000" || string(e.mode) == "040000"
	rest := t.b[sp+1+nul+1:]
	copy(e.hash[:], rest)
	t.b = rest[len(plumbing.ZeroHash):]
	return e, true, nil
}

// compareEntries orders raw entries as git sorts a tree (gitNameOrder).
func compareEntries(a, b rawEntry) int { return gitNameOrder(a.name, a.dir, b.name, b.dir) }

// gitNameOrder orders tree entry names as git does: bytewise, with a
// directory's name compared as if it ended in '/'. Both the raw trees the
// diff walks and the entries the tree builder sorts use it.
func gitNameOrder[T ~string | ~[]byte](a T, aDir bool, b T, bDir bool) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return cmp.Compare(a[i], b[i])
		}
	}
	// The byte after the common part: '/' for a directory's end, nothing
	// (-1) for a file's.
	end := func(name T, dir bool) int {
		switch {
		case len(name) > n:
			return int(name[n])
		case dir:
			return '/'
		}
		return -1
	}
	return cmp.Compare(end(a, aDir), end(b, bDir))
}

// rawTree returns tree h's raw object (nil for the zero hash), shared with
// the object cache: read-only.
func (r *Repo) rawTree(h plumbing.Hash) ([]byte, error) {
	if h.IsZero() {
		return nil, nil
	}
	o, err := r.objs.Get(plumbing.TreeObject, h)
	if err != nil {
		return nil, fmt.Errorf("memrepo: read tree %s: %w", h, err)
	}
	b, err := odb.SharedContent(o)
	if err != nil {
		return nil, fmt.Errorf("memrepo: read tree %s: %w", h, err)
	}
	return b, nil
}

// Walk calls fn for from and then each first parent, newest to oldest, until
// the root commit. If fn returns ErrStopWalk (possibly wrapped) the walk
// stops and Walk returns nil; any other error stops it and is returned as
// is. Merges made by people are followed along their first parent only,
// which is main's own history.
func (r *Repo) Walk(ctx context.Context, from plumbing.Hash, fn func(c *object.Commit) error) error {
	h := from
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, err := r.commitObject(h)
		if err != nil {
			return err
		}
		if err := fn(c); err != nil {
			if errors.Is(err, ErrStopWalk) {
				return nil
			}
			return err
		}
		if len(c.ParentHashes) == 0 {
			return nil
		}
		h = c.ParentHashes[0]
	}
}

// minAbbrev is the shortest abbreviated hash ResolveRevision accepts (git's
// own minimum).
const minAbbrev = 4

// ResolveRevision resolves a revision to a commit hash. Supported forms:
//
//   - "HEAD" (or "@"), "main", "heads/main", "refs/heads/main" (read from disk on
//     every call, so commits pushed with git are seen at once);
//   - a full 40-digit or abbreviated (at least 4 digits, unambiguous among
//     commits) hex hash;
//   - any of the above followed by "~N" / "~" (N-th first-parent ancestor)
//     and "^N" / "^" (N-th parent, "^0" the commit itself), repeatable:
//     "HEAD~2", "abc1234~1^2".
//
// Anything else, unknown or ambiguous hashes, non-commit objects and
// ancestors beyond the root are ErrRevisionNotFound.
func (r *Repo) ResolveRevision(ctx context.Context, rev string) (plumbing.Hash, error) {
	if err := ctx.Err(); err != nil {
		return plumbing.ZeroHash, err
	}
	notFound := func(why string) (plumbing.Hash, error) {
		return plumbing.ZeroHash, fmt.Errorf("%w: %q: %s", ErrRevisionNotFound, rev, why)
	}
	cut := strings.IndexAny(rev, "~^")
	if cut < 0 {
		cut = len(rev)
	}
	base, suffix := rev[:cut], rev[cut:]

	h, err := r.resolveBase(base)
	if err == nil {
		_, err = r.objs.Get(plumbing.CommitObject, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return notFound("no such commit")
		}
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("%w (resolving %q)", err, rev)
	}
	c, err := r.commitObject(h)
	if err != nil {
		return plumbing.ZeroHash, err
	}

	for suffix != "" {
		op := suffix[0]
		digits := 1
		for digits < len(suffix) && suffix[digits] >= '0' && suffix[digits] <= '9' {
			digits++
		}
		n := 1
		if digits > 1 {
			if n, err = strconv.Atoi(suffix[1:digits]); err != nil {
				return notFound("bad number in " + suffix[:digits])
			}
		}
		suffix = suffix[digits:]
		if op != '~' && op != '^' {
			return notFound("unsupported syntax")
		}
		if op == '^' {
			if n == 0 {
				continue
			}
			if n > len(c.ParentHashes) {
				return notFound(fmt.Sprintf("%s has no parent %d", c.Hash, n))
			}
			if c, err = r.commitObject(c.ParentHashes[n-1]); err != nil {
				return plumbing.ZeroHash, err
			}
			continue
		}
		for range n {
			if err := ctx.Err(); err != nil {
				return plumbing.ZeroHash, err
			}
			if len(c.ParentHashes) == 0 {
				return notFound("walks past the root commit")
			}
			if c, err = r.commitObject(c.ParentHashes[0]); err != nil {
				return plumbing.ZeroHash, err
			}
		}
	}
	return c.Hash, nil
}

// resolveBase resolves a revision without ~/^ suffixes to an object hash.
func (r *Repo) resolveBase(base string) (plumbing.Hash, error) {
	var ref plumbing.ReferenceName
	switch base {
	case "HEAD", "@":
		ref = plumbing.HEAD
	case "main", "heads/main", string(MainBranch):
		ref = MainBranch
	}
	if ref != "" {
		h, err := r.readRef(ref)
		if errors.Is(err, errRefNotFound) {
			return plumbing.ZeroHash, fmt.Errorf("%w: %s does not resolve", ErrRevisionNotFound, ref)
		}
		return h, err
	}

	hexs := strings.ToLower(base)
	if len(hexs) < minAbbrev || len(hexs) > 40 || strings.Trim(hexs, "0123456789abcdef") != "" {
		return plumbing.ZeroHash, fmt.Errorf("%w: not a ref or hex hash", ErrRevisionNotFound)
	}
	if h, ok := odb.ParseHash(hexs); ok {
		return h, nil // existence and type are checked by the caller
	}
	cands, err := r.objs.HashesWithPrefix(hexs)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	// Like git for commit-ish contexts, only commits count when deciding
	// whether an abbreviation is ambiguous.
	var found []plumbing.Hash
	for _, h := range cands {
		if _, err := r.objs.Get(plumbing.CommitObject, h); err == nil {
			found = append(found, h)
		}
	}
	switch len(found) {
	case 0:
		return plumbing.ZeroHash, fmt.Errorf("%w: no commit starts with %s", ErrRevisionNotFound, hexs)
	case 1:
		return found[0], nil
	default:
		return plumbing.ZeroHash, fmt.Errorf("%w: %s is ambiguous (%d commits)", ErrRevisionNotFound, hexs, len(found))
	}
}

// ListDirs returns the names of the folders directly under dir in commit,
// sorted (for "memory": the agents). A dir that does not exist yields an
// empty list; a dir that names a file is ErrInvalidPath.
func (r *Repo) ListDirs(ctx context.Context, commit plumbing.Hash, dir string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckPath(dir); err != nil {
		return nil, err
	}
	c, err := r.commitObject(commit)
	if err != nil {
		return nil, err
	}
	e, ok, err := r.lookupPath(c.TreeHash, dir)
	if err != nil {
		return nil, err
	}
	if !ok {
		return []string{}, nil
	}
	if e.Mode != filemode.Dir {
		return nil, fmt.Errorf("%w %q: is a file, not a directory", ErrInvalidPath, dir)
	}
	entries, err := r.treeEntries(e.Hash)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, en := range entries {
		if en.Mode == filemode.Dir {
			out = append(out, en.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}
