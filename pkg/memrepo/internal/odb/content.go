package odb

import (
	"io"
	"slices"
	"strings"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
)

// Objects from Get may be shared through the cache, and a packed one holds
// its content as a plain byte slice: these read it without the copies an
// io.Reader would cost, while keeping cached objects immutable.

// CopyContent returns a copy of o's content: cached objects stay immutable.
func CopyContent(o plumbing.EncodedObject) ([]byte, error) {
	if po, ok := o.(*packedObject); ok {
		return slices.Clone(po.cont), nil
	}
	rd, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer func() { _ = rd.Close() }() // read only
	buf := make([]byte, o.Size())
	if _, err := io.ReadFull(rd, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// TextContent is o's content as a string. A packed (or NewObject) object's
// content is never modified once made — it is shared through the cache —
// so the string is that content, not a copy: the write plane and both
// followers read each new version of a file that grows all an agent's life
// (decisions.md), and copying it for each was the largest allocation of a
// loaded memoryd (issue #25). Other objects are copied once, where
// string(CopyContent) would copy them twice.
func TextContent(o plumbing.EncodedObject) (string, error) {
	if po, ok := o.(*packedObject); ok {
		return unsafe.String(unsafe.SliceData(po.cont), len(po.cont)), nil
	}
	rd, err := o.Reader()
	if err != nil {
		return "", err
	}
	defer func() { _ = rd.Close() }() // read only
	var b strings.Builder
	b.Grow(int(o.Size()))
	if _, err := io.Copy(&b, rd); err != nil {
		return "", err
	}
	return b.String(), nil
}

// SharedContent returns o's content, shared with the cache when it comes
// from a pack: read-only. memrepo walks and decodes trees this way.
func SharedContent(o plumbing.EncodedObject) ([]byte, error) {
	if po, ok := o.(*packedObject); ok {
		return po.cont, nil
	}
	return CopyContent(o)
}
