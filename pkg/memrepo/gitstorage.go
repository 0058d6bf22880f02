package memrepo

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"

	"github.com/garden-bloom/memory/pkg/memrepo/internal/odb"
)

// gitStorage is the storage behind Repo.Git(): refs, config and the rest
// come from go-git's filesystem storage, objects from the odb.Store. go-git's
// own object storage loads the pack list once, so it would never find the
// objects of later commits (each writes a pack); odb.Store rescans, and is
// safe for concurrent use. Embedding the interface (not the concrete type)
// hides go-git's optional fast paths (delta objects, packfile writers) that
// would bypass odb.Store.
type gitStorage struct {
	storage.Storer
	objs *odb.Store
}

var _ storage.Storer = (*gitStorage)(nil)

func (s *gitStorage) NewEncodedObject() plumbing.EncodedObject { return s.objs.NewEncodedObject() }

func (s *gitStorage) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	return s.objs.SetEncodedObject(o)
}

func (s *gitStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	return s.objs.EncodedObject(t, h)
}

func (s *gitStorage) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return s.objs.IterEncodedObjects(t)
}

func (s *gitStorage) HasEncodedObject(h plumbing.Hash) error { return s.objs.HasEncodedObject(h) }

func (s *gitStorage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	return s.objs.EncodedObjectSize(h)
}

func (s *gitStorage) AddAlternate(remote string) error { return s.objs.AddAlternate(remote) }
