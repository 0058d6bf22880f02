package proposalapply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/garden-bloom/memory/pkg/applyplan"
	"github.com/garden-bloom/memory/pkg/blob"
	"github.com/garden-bloom/memory/pkg/mdops"
)

// factTimes remembers, per agent, when each fact was added and last returned
// by a read, for eviction (spec DiffMem §11.3: facts unused for 30 days go
// first). It lives in the object store, not git: usage is not memory, and
// recording a read must never create a commit. Updates are kept in memory and
// flushed every few seconds: a crash loses at most those timestamps, which
// only makes the facts concerned look as old as the index itself. For the
// same reason a document that does not parse starts afresh.
type factTimes struct {
	blobs  blob.Store
	now    func() time.Time
	logger *slog.Logger

	flushMu sync.Mutex
	mu      sync.Mutex
	docs    map[string]*factDoc
	dirty   map[string]bool
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
	// Version is the agent's meta.json version of the commit that added
	// the fact: eviction orders facts by it (many commits share a second).
	Version int32 `json:"version,omitzero"`
}

// appendJSON appends d as json.Marshal encodes it (keys sorted, zero times
// left out), without its reflection: under apply load the write plane
// flushes a few hundred agents' documents every two seconds, and encoding
// them by reflection showed in its profile.
func (d *factDoc) appendJSON(b []byte) []byte {
	b = append(b, `{"since":`...)
	b = appendJSONTime(b, d.Since)
	b = append(b, `,"facts":{`...)
	for i, h := range slices.Sorted(maps.Keys(d.Facts)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, h)
		b = append(b, ':', '{')
		t := d.Facts[h]
		if !t.Added.IsZero() {
			b = append(b, `"added":`...)
			b = appendJSONTime(b, t.Added)
		}
		sep := !t.Added.IsZero()
		if !t.Used.IsZero() {
			if sep {
				b = append(b, ',')
			}
			b = append(b, `"used":`...)
			b = appendJSONTime(b, t.Used)
			sep = true
		}
		if t.Version != 0 {
			if sep {
				b = append(b, ',')
			}
			b = append(b, `"version":`...)
			b = strconv.AppendInt(b, int64(t.Version), 10)
		}
		b = append(b, '}')
	}
	return append(b, '}', '}')
}

// appendJSONTime appends t as time.Time's MarshalJSON does.
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendJSONString appends s quoted as encoding/json quotes it: fact
// hashes are plain hex, anything else goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func newFactTimes(blobs blob.Store, now func() time.Time, logger *slog.Logger) *factTimes {
	return &factTimes{blobs: blobs, now: now, logger: logger, docs: map[string]*factDoc{}, dirty: map[string]bool{}}
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
			// Edited by hand or damaged on disk: the times are lost, as
			// after a crash, but the agent's proposals must still apply.
			f.logger.Warn("unreadable fact index; its times start afresh", "key", factKey(agentID), "err", err)
			d = &factDoc{Since: f.now().UTC(), Facts: map[string]*factTime{}}
		}
		if d.Facts == nil {
			d.Facts = map[string]*factTime{}
		}
		for h, t := range d.Facts {
			if t == nil { // "h": null, written by hand: no times known
				delete(d.Facts, h)
			}
		}
	}
	f.docs[agentID] = d
	return d, nil
}

// RecordsOf returns what eviction orders the agent's facts by: when each
// was added (and by which version) and last used. A fact the index has no
// record of counts as added when the index first saw the agent, version 0.
func (f *factTimes) RecordsOf(ctx context.Context, agentID string) (func(text string) applyplan.FactRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.load(ctx, agentID)
	if err != nil {
		return nil, err
	}
	snapshot := make(map[string]applyplan.FactRecord, len(d.Facts))
	for h, t := range d.Facts {
		snapshot[h] = applyplan.FactRecord{Added: t.Added, Used: t.Used, Version: t.Version}
	}
	since := d.Since
	return func(text string) applyplan.FactRecord {
		r, ok := snapshot[mdops.FactHash(text)]
		if !ok || r.Added.IsZero() {
			r.Added = since
		}
		return r
	}, nil
}

// Added records facts added at time at by the commit that made the agent's
// version.
func (f *factTimes) Added(ctx context.Context, agentID string, facts []string, at time.Time, version int32) error {
	if len(facts) == 0 {
		return nil
	}
	return f.update(ctx, agentID, func(d *factDoc) int {
		for _, text := range facts {
			h := mdops.FactHash(text)
			if d.Facts[h] == nil {
				d.Facts[h] = &factTime{}
			}
			d.Facts[h].Added = at.UTC()
			d.Facts[h].Version = version
		}
		return len(facts)
	})
}

// Retain drops the records of facts whose hashes are not in present (the
// facts of the agent's facts.md): those that left it, by eviction, by a
// proposal or by a person's commit. So the index never holds more records
// than the file has facts, and a fact appended again later starts afresh.
func (f *factTimes) Retain(ctx context.Context, agentID string, present map[string]bool) error {
	return f.update(ctx, agentID, func(d *factDoc) int {
		n := 0
		for h := range d.Facts {
			if !present[h] {
				delete(d.Facts, h)
				n++
			}
		}
		return n
	})
}

// factHashes are the FactHash of every fact of a facts.md.
func factHashes(factsMD string) map[string]bool {
	facts := mdops.ParseFacts(factsMD)
	hs := make(map[string]bool, len(facts))
	for _, f := range facts {
		hs[mdops.FactHash(f.Text)] = true
	}
	return hs
}

// UsageResolution is how much newer a use must be than the recorded one to
// be saved. Eviction ranks facts by days unused (30 by default), so a fact
// read all the time need not rewrite the agent's index on every flush.
const UsageResolution = time.Hour

// Used records usage reports; it returns how many were accepted.
func (f *factTimes) Used(ctx context.Context, agentID string, used map[string]time.Time) (int, error) {
	err := f.update(ctx, agentID, func(d *factDoc) int {
		changed := 0
		for h, at := range used {
			if d.Facts[h] == nil {
				d.Facts[h] = &factTime{}
			}
			if at.Sub(d.Facts[h].Used) >= UsageResolution {
				d.Facts[h].Used = at.UTC()
				changed++
			}
		}
		return changed
	})
	if err != nil {
		return 0, err
	}
	return len(used), nil
}

func (f *factTimes) update(ctx context.Context, agentID string, fn func(*factDoc) int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.load(ctx, agentID)
	if err != nil {
		return err
	}
	if fn(d) > 0 {
		f.dirty[agentID] = true
	}
	return nil
}

// Flush writes every changed agent's document. The documents are encoded
// under the lock and written outside it, so applies (TimeOf, Added) never
// wait for the object store.
func (f *factTimes) Flush(ctx context.Context) error {
	f.flushMu.Lock() // one flush at a time: an older encoding must not land last
	defer f.flushMu.Unlock()
	f.mu.Lock()
	pending := make(map[string][]byte, len(f.dirty))
	for agentID := range f.dirty {
		pending[agentID] = f.docs[agentID].appendJSON(nil)
		delete(f.dirty, agentID)
	}
	f.mu.Unlock()
	var errs []error
	for agentID, data := range pending {
		_, err := blob.PutBytes(ctx, f.blobs, factKey(agentID), data, blob.PutOptions{ContentType: "application/json"})
		if err != nil {
			errs = append(errs, fmt.Errorf("fact index %s: %w", agentID, err))
			f.mu.Lock()
			f.dirty[agentID] = true // retried on the next flush
			f.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// run flushes every interval until ctx ends, then once more.
func (f *factTimes) run(ctx context.Context, interval time.Duration, logger interface{ Warn(string, ...any) }) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := f.Flush(context.WithoutCancel(ctx)); err != nil {
				logger.Warn("fact index not saved", "err", err)
			}
			return
		case <-t.C:
			if err := f.Flush(ctx); err != nil {
				logger.Warn("fact index not saved; will retry", "err", err)
			}
		}
	}
}
