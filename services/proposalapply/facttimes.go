package proposalapply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/garden-bloom/memory/pkg/blob"
)

// factTimes remembers, per agent, when each fact was added and last returned
// by a read, for eviction (spec DiffMem §11.3: facts unused for 30 days go
// first). It lives in the object store, not git: usage is not memory, and
// recording a read must never create a commit.
type factTimes struct {
	blobs blob.Store
	now   func() time.Time

	mu   sync.Mutex
	docs map[string]*factDoc
}

// factDoc is fact-index/<agentId>.json.
type factDoc struct {
	// Since is when the index first saw the agent; facts it has no record of
	// (written by a person, or before this index existed) count as added then.
	Since time.Time            `json:"since"`
	Facts map[string]*factTime `json:"facts"`
}

type factTime struct {
	Added time.Time `json:"added,omitzero"`
	Used  time.Time `json:"used,omitzero"`
}

func newFactTimes(blobs blob.Store, now func() time.Time) *factTimes {
	return &factTimes{blobs: blobs, now: now, docs: map[string]*factDoc{}}
}

// FactHash identifies a fact by its trimmed text (the hash the read plane
// reports usage with).
func FactHash(text string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "- "))))
	return hex.EncodeToString(sum[:])
}

func factKey(agentID string) string { return "fact-index/" + agentID + ".json" }

// load returns the agent's document; the caller holds mu.
func (f *factTimes) load(ctx context.Context, agentID string) (*factDoc, error) {
	if d, ok := f.docs[agentID]; ok {
		return d, nil
	}
	d := &factDoc{Facts: map[string]*factTime{}}
	data, _, err := blob.GetBytes(ctx, f.blobs, factKey(agentID))
	switch {
	case errors.Is(err, blob.ErrNotFound):
		d.Since = f.now().UTC()
	case err != nil:
		return nil, fmt.Errorf("fact index: %w", err)
	default:
		if err := json.Unmarshal(data, d); err != nil {
			return nil, fmt.Errorf("fact index %s: %w", factKey(agentID), err)
		}
		if d.Facts == nil {
			d.Facts = map[string]*factTime{}
		}
	}
	f.docs[agentID] = d
	return d, nil
}

func (f *factTimes) save(ctx context.Context, agentID string, d *factDoc) error {
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, err = blob.PutBytes(ctx, f.blobs, factKey(agentID), data, blob.PutOptions{ContentType: "application/json"})
	return err
}

// TimeOf returns the function eviction orders facts by: the later of when a
// fact was added and when it was last used.
func (f *factTimes) TimeOf(ctx context.Context, agentID string) (func(text string) time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.load(ctx, agentID)
	if err != nil {
		return nil, err
	}
	snapshot := make(map[string]time.Time, len(d.Facts))
	for h, t := range d.Facts {
		latest := t.Added
		if t.Used.After(latest) {
			latest = t.Used
		}
		snapshot[h] = latest
	}
	since := d.Since
	return func(text string) time.Time {
		if t, ok := snapshot[FactHash(text)]; ok && !t.IsZero() {
			return t
		}
		return since
	}, nil
}

// Added records facts added at time at.
func (f *factTimes) Added(ctx context.Context, agentID string, facts []string, at time.Time) error {
	if len(facts) == 0 {
		return nil
	}
	return f.update(ctx, agentID, func(d *factDoc) int {
		for _, text := range facts {
			h := FactHash(text)
			if d.Facts[h] == nil {
				d.Facts[h] = &factTime{}
			}
			d.Facts[h].Added = at.UTC()
		}
		return len(facts)
	})
}

// Used records usage reports; it returns how many were accepted.
func (f *factTimes) Used(ctx context.Context, agentID string, used map[string]time.Time) (int, error) {
	n := 0
	err := f.update(ctx, agentID, func(d *factDoc) int {
		for h, at := range used {
			if d.Facts[h] == nil {
				d.Facts[h] = &factTime{}
			}
			if at.After(d.Facts[h].Used) {
				d.Facts[h].Used = at.UTC()
			}
			n++
		}
		return n
	})
	return n, err
}

func (f *factTimes) update(ctx context.Context, agentID string, fn func(*factDoc) int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.load(ctx, agentID)
	if err != nil {
		return err
	}
	if fn(d) == 0 {
		return nil
	}
	return f.save(ctx, agentID, d)
}
