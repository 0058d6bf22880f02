// Package memrepo owns the canonical memory monorepo: one bare git
// repository holding every agent's Markdown memory and logic files.
//
// The repository is bare because nothing ever edits a checkout: every change
// is a single commit built in memory by the proposal-apply service and
// written straight into the object database. Layout and commit conventions
// are described in the README.md committed by Init (see README.layout.md).
package memrepo

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	formatcfg "github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/garden-bloom/memory/pkg/memrepo/internal/odb"
)

// MainBranch is the only branch of the memory monorepo.
const MainBranch = plumbing.ReferenceName("refs/heads/main")

// InitCommitMessage is the message of the single commit created by Init.
const InitCommitMessage = "init: memory monorepo layout"

// Default identity for the init commit when InitOptions leaves it empty.
const (
	DefaultAuthorName  = "Garden Bloom Memory"
	DefaultAuthorEmail = "memory@gardenbloom.local"
)

// readmeLayout is the README.md of the first commit. It lives in its own file
// so it can be read and reviewed as Markdown rather than as a Go string.
//
//go:embed README.layout.md
var readmeLayout []byte

var (
	// ErrNotRepository means the path exists but is not a git repository
	// (and, for Init, is not empty either, so Init refuses to touch it).
	ErrNotRepository = errors.New("memrepo: not a git repository")
	// ErrNotBare means the path is a git repository with a worktree; the
	// memory monorepo must be bare so nobody edits files behind the
	// proposal-apply service's back.
	ErrNotBare = errors.New("memrepo: repository is not bare")
	// ErrNoMainBranch means the repository exists but refs/heads/main does
	// not resolve. Init deliberately does not repair this: writing a second
	// root commit would fork history.
	ErrNoMainBranch = errors.New("memrepo: refs/heads/main does not resolve")
)

// InitOptions configures Init. The zero value is valid.
type InitOptions struct {
	// Name and Email are used as both author and committer of the init
	// commit. Empty values fall back to DefaultAuthorName/DefaultAuthorEmail.
	Name  string
	Email string
	// Now is the clock for the init commit timestamp; nil means time.Now.
	// It is injectable so tests (and reproducible deployments) get
	// deterministic commit hashes.
	Now func() time.Time
}

func (o InitOptions) withDefaults() InitOptions {
	if o.Name == "" {
		o.Name = DefaultAuthorName
	}
	if o.Email == "" {
		o.Email = DefaultAuthorEmail
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Repo is an opened memory monorepo. All methods are safe for concurrent
// use; Commit calls are serialised by writeMu.
type Repo struct {
	path string
	repo *git.Repository
	// objs is the goroutine-safe object database used by the read and
	// write planes (see internal/odb for why not go-git's storage).
	objs *odb.Store
	// caches hold objects decoded once and shared by every reader
	// (objects are immutable, so caching them by hash is always correct):
	// trees for path lookups, commits because every read resolves the
	// head commit, several times; and the odb's objects.
	*caches
	// writeMu serialises Commit (and RecoverStaleLock) within the process;
	// other processes are serialised by git's ref lock file.
	writeMu sync.Mutex
	// compactMu serialises CompactPacks. It does not exclude commits (see
	// CompactPacks), so merging packs never delays one.
	compactMu sync.Mutex
	head      headCache
}

// Path returns the absolute path of the bare repository directory.
func (r *Repo) Path() string { return r.path }

// Git exposes the repository to go-git (the pusher uses it). Objects are
// read through the Repo's own object store, so packs created after opening
// (by Commit, or by git gc) are seen; writing objects through it fails:
// commits go through Commit. Prefer the Repo read methods: go-git's
// reference and config handling is not safe for concurrent use.
func (r *Repo) Git() *git.Repository { return r.repo }

// Head returns the commit hash refs/heads/main points to. It looks at the
// ref on disk on every call (loose file, else packed-refs, exactly as
// Commit's compare-and-swap does), so commits pushed with the git binary are
// seen immediately; an unchanged loose ref file is not read again (see
// headCache).
func (r *Repo) Head(ctx context.Context) (plumbing.Hash, error) {
	if err := ctx.Err(); err != nil {
		return plumbing.ZeroHash, err
	}
	if fi, err := os.Stat(r.refPath(MainBranch)); err == nil {
		if h, ok := r.head.get(fi); ok {
			return h, nil
		}
	}
	if h, ok := r.head.load(r.refPath(MainBranch)); ok {
		return h, nil
	}
	return r.readMain() // packed, missing, symbolic or malformed: the full lookup decides
}

// Open opens an existing memory monorepo at path without writing anything.
// It fails with ErrNotRepository, ErrNotBare or ErrNoMainBranch (use
// errors.Is) if path is not a bare repository whose main branch resolves, and
// with an error wrapping fs.ErrNotExist if path does not exist.
func Open(path string) (*Repo, error) { return open(path, newCaches()) }

// open is Open with the caches the repository uses.
func open(path string, c *caches) (*Repo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("memrepo: open %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("memrepo: open: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrNotRepository, abs)
	}
	// Checked up front because go-git's PlainOpen happily "opens" any
	// directory as a bare repo and only fails later, with less clear errors.
	if _, err := os.Stat(filepath.Join(abs, git.GitDirName)); err == nil {
		return nil, fmt.Errorf("%w: %s has a %s directory (worktree checkout)", ErrNotBare, abs, git.GitDirName)
	}
	if !looksLikeGitDir(abs) {
		return nil, fmt.Errorf("%w: %s (missing HEAD, objects/ or refs/)", ErrNotRepository, abs)
	}

	repo, err := git.PlainOpen(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotRepository, abs, err)
	}
	cfg, err := repo.Config()
	if err != nil {
		return nil, fmt.Errorf("memrepo: read config of %s: %w", abs, err)
	}
	if !cfg.Core.IsBare {
		return nil, fmt.Errorf("%w: %s (core.bare is not true)", ErrNotBare, abs)
	}
	objs := odb.NewWithCache(abs, c.objects)
	// Same repository, but objects are read through the odb.Store (see
	// gitStorage).
	repo, err = git.Open(&gitStorage{Storer: repo.Storer, objs: objs}, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotRepository, abs, err)
	}
	r := &Repo{path: abs, repo: repo, objs: objs, caches: c}
	if _, err := r.Head(context.Background()); err != nil {
		return nil, err
	}
	return r, nil
}

// looksLikeGitDir mirrors git's own is_git_directory() heuristic: a HEAD
// file plus objects/ and refs/ directories.
func looksLikeGitDir(dir string) bool {
	head, err := os.Stat(filepath.Join(dir, "HEAD"))
	if err != nil || !head.Mode().IsRegular() {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		fi, err := os.Stat(filepath.Join(dir, sub))
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// Init opens the memory monorepo at path, creating it first if path does not
// exist or is an empty directory.
//
// A new repository is bare, has HEAD -> refs/heads/main and exactly one
// commit ("init: memory monorepo layout") containing README.md. It is built
// in a temporary sibling directory, fsynced and then renamed into place, so a
// crash leaves either no repository or a complete one at path, never a
// half-initialised one (at worst an orphaned ".<name>.init-*" sibling, which
// is safe to delete). The parent directory is created if missing.
//
// If path already holds a repository, Init behaves like Open: it verifies the
// repository and never adds a commit. A non-empty directory that is not a
// bare repository with a resolvable main branch is an error.
func Init(ctx context.Context, path string, opts InitOptions) (*Repo, error) {
	opts = opts.withDefaults()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("memrepo: init %s: %w", path, err)
	}

	empty, err := isMissingOrEmptyDir(abs)
	if err != nil {
		return nil, err
	}
	if !empty {
		return Open(abs)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	parent := filepath.Dir(abs)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("memrepo: init: create parent: %w", err)
	}
	// Sibling, not os.TempDir(): rename(2) is only atomic within one
	// filesystem.
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(abs)+".init-*")
	if err != nil {
		return nil, fmt.Errorf("memrepo: init: create temp dir: %w", err)
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = os.RemoveAll(tmp)
		}
	}()

	if err := buildRepo(ctx, tmp, opts); err != nil {
		return nil, err
	}
	// MkdirTemp creates 0700; a git repo is normally world-readable and the
	// operator may want to inspect it with their own user.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("memrepo: init: %w", err)
	}
	// Everything go-git wrote must be on disk before the rename publishes it,
	// otherwise a crash could leave a complete-looking repo with empty files.
	if err := syncTree(tmp); err != nil {
		return nil, fmt.Errorf("memrepo: init: sync %s: %w", tmp, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// os.Rename refuses to replace a directory, even an empty one, so an
	// empty placeholder (e.g. created by an operator) is removed first.
	// os.Remove only deletes empty directories, and a crash between the two
	// steps leaves path missing, which Init handles like the empty case.
	if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if empty, statErr := isMissingOrEmptyDir(abs); statErr == nil && !empty {
			return Open(abs) // lost a race: it is no longer empty
		}
		return nil, fmt.Errorf("memrepo: init: replace empty directory %s: %w", abs, err)
	}
	// If the rename fails, somebody else may have won a race to create the
	// repo (the target is no longer empty): open theirs instead.
	if err := os.Rename(tmp, abs); err != nil {
		if empty, statErr := isMissingOrEmptyDir(abs); statErr == nil && !empty {
			return Open(abs)
		}
		return nil, fmt.Errorf("memrepo: init: move repository into place: %w", err)
	}
	renamed = true
	if err := odb.SyncDir(parent); err != nil {
		return nil, fmt.Errorf("memrepo: init: sync %s: %w", parent, err)
	}
	return Open(abs)
}

// isMissingOrEmptyDir reports whether path can be initialised. A regular
// file (or anything else that is not a directory) is an error.
func isMissingOrEmptyDir(path string) (bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("memrepo: stat %s: %w", path, err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("%w: %s is not a directory", ErrNotRepository, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("memrepo: open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only
	names, err := f.Readdirnames(1)
	if len(names) > 0 {
		return false, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("memrepo: read %s: %w", path, err)
	}
	return true, nil
}

// buildRepo creates a bare repository at dir and writes the init commit
// straight into its object store. No worktree and no git binary are
// involved: blob, tree and commit objects are encoded by go-git.
func buildRepo(ctx context.Context, dir string, opts InitOptions) error {
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		Bare:        true,
		InitOptions: git.InitOptions{DefaultBranch: MainBranch},
	})
	if err != nil {
		return fmt.Errorf("memrepo: init bare repository: %w", err)
	}
	// go-git omits core.repositoryformatversion, and without it the git CLI
	// ignores core.bare when given --git-dir (rev-parse then reports a
	// non-bare repo). Write it like `git init --bare` does.
	cfg, err := repo.Config()
	if err != nil {
		return fmt.Errorf("memrepo: read config: %w", err)
	}
	cfg.Core.RepositoryFormatVersion = formatcfg.Version_0
	if err := repo.SetConfig(cfg); err != nil {
		return fmt.Errorf("memrepo: write config: %w", err)
	}
	st := repo.Storer

	blobHash, err := storeObject(st, plumbing.BlobObject, func(o plumbing.EncodedObject) error {
		w, err := o.Writer()
		if err != nil {
			return err
		}
		if _, err := w.Write(readmeLayout); err != nil {
			_ = w.Close()
			return err
		}
		return w.Close()
	})
	if err != nil {
		return fmt.Errorf("memrepo: write README blob: %w", err)
	}

	tree := &object.Tree{Entries: []object.TreeEntry{
		{Name: "README.md", Mode: filemode.Regular, Hash: blobHash},
	}}
	treeHash, err := storeObject(st, plumbing.TreeObject, tree.Encode)
	if err != nil {
		return fmt.Errorf("memrepo: write tree: %w", err)
	}

	if err := ctx.Err(); err != nil {
		return err
	}
	sig := object.Signature{Name: opts.Name, Email: opts.Email, When: opts.Now()}
	commit := &object.Commit{
		Author:    sig,
		Committer: sig,
		// Trailing newline: that is what the git CLI writes, and it keeps
		// `git log --format=%B` output identical to CLI-made commits.
		Message:  InitCommitMessage + "\n",
		TreeHash: treeHash,
	}
	commitHash, err := storeObject(st, plumbing.CommitObject, commit.Encode)
	if err != nil {
		return fmt.Errorf("memrepo: write commit: %w", err)
	}

	if err := st.SetReference(plumbing.NewHashReference(MainBranch, commitHash)); err != nil {
		return fmt.Errorf("memrepo: set %s: %w", MainBranch, err)
	}
	return nil
}

// storeObject encodes one object with fill and writes it to st.
func storeObject(st storer.EncodedObjectStorer, t plumbing.ObjectType, fill func(plumbing.EncodedObject) error) (plumbing.Hash, error) {
	obj := st.NewEncodedObject()
	obj.SetType(t)
	if err := fill(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(obj)
}

// syncTree fsyncs every regular file and directory under root (directories
// after their contents, so new directory entries are durable too).
func syncTree(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, p)
		case d.Type().IsRegular():
			return odb.SyncFile(p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := odb.SyncDir(dirs[i]); err != nil {
			return err
		}
	}
	return nil
}
