package proposalstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/garden-bloom/memory/pkg/blob"
)

// Opening the store: the index is brought up to date with the log (or
// rebuilt from it), then the log is written and merged from where it ends.

// Options configure Open.
type Options struct {
	// IndexPath is the local index file; "" = a temporary file, rebuilt
	// from the log at every start (tests, tools).
	IndexPath string
	Logger    *slog.Logger
}

// Open opens the index, brings it up to date with the log (the documents
// earlier versions wrote, then the log in batch order) and starts merging
// segments in the background. Close stops it.
func Open(ctx context.Context, blobs blob.Store, opts Options) (*Store, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	idx, err := openIndex(opts.IndexPath, logger)
	if err != nil {
		return nil, err
	}
	s := &Store{logger: logger, idx: idx, blobs: blobs, indexPath: opts.IndexPath,
		marked: map[string]*Record{}, reserved: map[string]string{}, unindexed: map[string]entry{}}
	st, err := s.catchUp(ctx, true)
	switch {
	case errors.Is(err, blob.ErrUnavailable):
		// Serve what the index holds; writes wait until the log is read.
		logger.Warn("object store unavailable: proposals are served from the local index, writes are refused until the store is back", "err", err)
		s.behind.Store(true)
	case err != nil:
		_ = s.idx.close()
		return nil, err
	}
	if s.count, s.awaiting, err = s.idx.scan(); err != nil {
		_ = s.idx.close()
		return nil, fmt.Errorf("proposalstore: index: %w", err)
	}
	if !s.behind.Load() {
		s.startLog(st)
	}
	return s, nil
}

// startLog starts writing and merging the log after what catching up found.
func (s *Store) startLog(st logState) {
	s.log = newGroupLog(s.blobs, st.next, s.written)
	s.compact = newCompactor(s.blobs, s.idx, s.logger, st.live)
}

// resume catches up with the log that could not be read at Open and
// starts writing it; the first write after an outage does it.
func (s *Store) resume() error {
	s.catchMu.Lock()
	defer s.catchMu.Unlock()
	if !s.behind.Load() {
		return nil
	}
	st, err := s.catchUp(context.Background(), false)
	if err != nil {
		return err
	}
	n, awaiting, err := s.idx.scan()
	if err != nil {
		return fmt.Errorf("proposalstore: index: %w", err)
	}
	s.mu.Lock()
	s.count, s.awaiting = n, awaiting
	s.mu.Unlock()
	s.startLog(st)
	s.behind.Store(false)
	s.logger.Info("proposal log read: writes accepted again")
	return nil
}

// logState is where the log stands after catching up.
type logState struct {
	live []segment
	next uint64
}

// catchUp takes into the index what the log holds beyond it. An index that
// claims batches the log does not have (another store, a wiped bucket) is
// rebuilt from scratch when mayRebuild (at Open, before anyone reads it).
func (s *Store) catchUp(ctx context.Context, mayRebuild bool) (logState, error) {
	blobs, path := s.blobs, s.indexPath
	var found []segment
	var legacyKeys []string
	for info, err := range blobs.List(ctx, Prefix) {
		if err != nil {
			return logState{}, fmt.Errorf("proposalstore: list: %w", err)
		}
		if g, ok := parseSegmentKey(info.Key); ok {
			found = append(found, g)
		} else {
			legacyKeys = append(legacyKeys, info.Key)
		}
	}
	live, covered := liveSegments(found)
	st := logState{live: live}
	if len(live) > 0 {
		st.next = live[len(live)-1].hi + 1
	}
	through, indexed, legacyRead := s.idx.through()
	if indexed && through >= st.next && !mayRebuild {
		return logState{}, fmt.Errorf("proposalstore: the index holds batch %d but the log ends before %d (a wiped or different bucket?): restart memoryd to rebuild the index", through, st.next)
	}
	if indexed && through >= st.next {
		s.logger.Warn("proposal index is ahead of the log: rebuilding it", "indexThrough", through, "logNext", st.next)
		if err := s.idx.close(); err != nil {
			return logState{}, err
		}
		if path != "" {
			if err := os.Rename(path, fmt.Sprintf("%s.ahead-%d", path, time.Now().UnixNano())); err != nil {
				return logState{}, fmt.Errorf("proposalstore: index: %w", err)
			}
		}
		idx, err := openIndex(path, s.logger)
		if err != nil {
			return logState{}, err
		}
		s.idx, indexed, legacyRead = idx, false, false
	}
	start := time.Now()
	taken := 0
	if !legacyRead {
		var batch []entry
		for _, key := range legacyKeys {
			data, _, err := blob.GetBytes(ctx, blobs, key)
			if err != nil {
				return logState{}, fmt.Errorf("proposalstore: read %s: %w", key, err)
			}
			if e, ok := s.parse(key, data); ok {
				batch = append(batch, e)
			}
			if len(batch) == catchUpBatch {
				if err := s.take(batch, nil, false); err != nil {
					return logState{}, err
				}
				taken, batch = taken+len(batch), batch[:0]
			}
		}
		if err := s.take(batch, nil, true); err != nil {
			return logState{}, err
		}
		taken += len(batch)
	}
	for _, g := range live {
		if indexed && g.hi <= through {
			continue
		}
		var batch []entry
		err := readSegment(ctx, blobs, g, func(line []byte) error {
			if e, ok := s.parse(g.key(), line); ok {
				batch = append(batch, e)
			}
			if len(batch) < catchUpBatch {
				return nil
			}
			err := s.take(batch, nil, false)
			taken, batch = taken+len(batch), batch[:0]
			return err
		})
		if err != nil {
			return logState{}, err
		}
		hi := g.hi
		if err := s.take(batch, &hi, false); err != nil {
			return logState{}, err
		}
		taken += len(batch)
	}
	if taken > 0 {
		s.logger.Info("proposal index caught up with the log", "documents", taken, "took", time.Since(start).Round(time.Millisecond))
	}
	for _, g := range covered {
		if err := blobs.Delete(ctx, g.key()); err != nil {
			s.logger.Warn("merged proposal log segment not deleted", "key", g.key(), "err", err)
		}
	}
	return st, nil
}

// catchUpBatch is how many documents one index transaction takes in while
// catching up: bounded memory, few fsyncs.
const catchUpBatch = 512

// parse reads one document; one it cannot read is logged and left in
// place (merges keep it), never silently dropped.
func (s *Store) parse(where string, data []byte) (entry, bool) {
	rec, err := decode(data)
	if err != nil {
		s.logger.Error("unreadable proposal document left in place", "key", where, "err", err)
		return entry{}, false
	}
	return entry{rec: rec, line: bytes.Clone(data)}, true
}

func (s *Store) take(batch []entry, through *uint64, legacy bool) error {
	if len(batch) == 0 && through == nil && !legacy {
		return nil
	}
	if _, err := s.idx.put(batch, through, legacy); err != nil {
		return fmt.Errorf("proposalstore: index: %w", err)
	}
	return nil
}
