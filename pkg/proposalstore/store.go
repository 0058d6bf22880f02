// Package proposalstore keeps proposals durable as JSON documents in the
// object store, so the write plane can move to any host once the store is
// MinIO: a log of whole documents, written in batches (log.go). A proposal
// or a change of it is acknowledged only after it is durably written. A
// local index on disk (index.go), brought up to date from the log at
// start-up, answers queries, so memory does not grow with history: the
// process holds only proposals being written or applied.
package proposalstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/blob"
)

// Prefix is where proposal documents live in the object store.
const Prefix = "proposals/"

// Sentinel errors.
var (
	ErrNotFound = errors.New("proposal not found")
	// ErrIndexUnavailable: a write reached the log but the local index
	// could not take it in (a full disk); writes are refused until it can.
	ErrIndexUnavailable = errors.New("proposal index unavailable")
)

// Record is a stored proposal: the public proposal plus what the apply engine
// needs to know about where it came from.
type Record struct {
	Proposal *memoryv1.Proposal
	// BaseCommit is the head of main when the proposal was made; the engine
	// compares sections against it for proposals without expectedVersion.
	BaseCommit string
	// BaseVersion is the agent's meta.json version at BaseCommit.
	BaseVersion int32
	// Rev counts the durable writes of the proposal (1 = created); the
	// index and log merges keep the highest. 0 in documents written before
	// revs existed.
	Rev uint64
}

// Clone returns a deep copy.
func (r *Record) Clone() *Record {
	return &Record{Proposal: proto.Clone(r.Proposal).(*memoryv1.Proposal), BaseCommit: r.BaseCommit, BaseVersion: r.BaseVersion, Rev: r.Rev}
}

// document is the JSON shape on disk; the proposal keeps the API's JSON form
// so a person reading the bucket sees the same fields as the REST API.
type document struct {
	Schema      int             `json:"schema"`
	Proposal    json.RawMessage `json:"proposal"`
	BaseCommit  string          `json:"baseCommit,omitempty"`
	BaseVersion int32           `json:"baseVersion"`
	Rev         uint64          `json:"rev,omitempty"`
}

// encode returns the document as one line of JSON.
func encode(r *Record) ([]byte, error) {
	p, err := protojson.Marshal(r.Proposal)
	if err != nil {
		return nil, err
	}
	// Marshal compacts the raw proposal too: one line.
	return json.Marshal(document{Schema: 1, Proposal: p, BaseCommit: r.BaseCommit, BaseVersion: r.BaseVersion, Rev: r.Rev})
}

func decode(data []byte) (*Record, error) {
	var doc document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Schema != 1 {
		return nil, fmt.Errorf("unknown schema %d", doc.Schema)
	}
	p := &memoryv1.Proposal{}
	if err := protojson.Unmarshal(doc.Proposal, p); err != nil {
		return nil, err
	}
	return &Record{Proposal: p, BaseCommit: doc.BaseCommit, BaseVersion: doc.BaseVersion, Rev: doc.Rev}, nil
}

// Store is the durable proposal store over its on-disk index.
type Store struct {
	logger *slog.Logger

	locks [64]sync.Mutex // per-proposal write locks, striped by id

	blobs     blob.Store
	indexPath string
	idx       *index
	// log and compact start once the log has been read: at Open, or at the
	// first write after an object store outage at Open (behind).
	log     *groupLog
	compact *compactor
	behind  atomic.Bool
	catchMu sync.Mutex

	mu sync.Mutex
	// marked holds transient states (Mark) until the proposal's next
	// durable write: only proposals being applied.
	marked map[string]*Record
	// reserved maps an idempotency key to the id whose Create is writing it.
	reserved map[string]string
	// unindexed holds what reached the log but not the index (its write
	// failed), newest version per id, until repair takes it in: at most one
	// batch, since writes are refused meanwhile.
	unindexed      map[string]entry
	unindexedBatch uint64
	count          int
	awaiting       map[waitKey]int
}

// written takes a batch the log just stored into the index, with the
// in-memory counts, and hands the segment to the merges; the log calls it
// before its writers return. When the
// index cannot take it, the batch is kept in memory and writes are refused
// until repair succeeds: what was acknowledged stays readable.
func (s *Store) written(seg segment, batch []entry) {
	s.index(seg, batch)
	s.compact.add(seg)
}

func (s *Store) index(seg segment, batch []entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unindexed) > 0 {
		// Writes admitted before the index failed: they join what waits
		// for the repair (bounded by the writes in flight).
		for _, e := range batch {
			s.unindexed[e.rec.Proposal.GetProposalId()] = e
		}
		s.unindexedBatch = seg.hi
		return
	}
	changes, err := s.idx.put(batch, &seg.hi, false)
	if err != nil {
		s.logger.Error("proposal index write failed: writes are refused until it works again", "segment", seg.key(), "err", err)
		for _, e := range batch {
			s.unindexed[e.rec.Proposal.GetProposalId()] = e
		}
		s.unindexedBatch = seg.hi
		return
	}
	s.counted(changes)
}

// counted updates the in-memory counts; the caller holds mu.
func (s *Store) counted(changes []change) {
	for _, c := range changes {
		if c.added {
			s.count++
		}
		if c.known && awaitsReview(c.before.status) {
			k := waitKey{c.before.agent, c.before.reason}
			if s.awaiting[k]--; s.awaiting[k] <= 0 {
				delete(s.awaiting, k)
			}
		}
		if awaitsReview(c.now.status) {
			s.awaiting[waitKey{c.now.agent, c.now.reason}]++
		}
	}
}

// writable catches up with the log after an outage at Open and repairs
// the index if a write to it failed, or says why writes are refused.
func (s *Store) writable() error {
	if s.behind.Load() {
		if err := s.resume(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unindexed) == 0 {
		return nil
	}
	batch := make([]entry, 0, len(s.unindexed))
	for _, e := range s.unindexed {
		batch = append(batch, e)
	}
	through := s.unindexedBatch
	changes, err := s.idx.put(batch, &through, false)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrIndexUnavailable, err)
	}
	s.counted(changes)
	clear(s.unindexed)
	s.logger.Info("proposal index repaired: writes accepted again", "documents", len(batch))
	return nil
}

// Close stops the log's background merges and closes the index.
func (s *Store) Close() {
	s.catchMu.Lock()
	defer s.catchMu.Unlock()
	if s.compact != nil {
		s.compact.close()
	}
	if err := s.idx.close(); err != nil {
		s.logger.Warn("closing the proposal index", "err", err)
	}
}

func idemKey(p *memoryv1.Proposal) string {
	if p.GetIdempotencyKey() == "" {
		return ""
	}
	return p.GetAgentId() + "\x00" + p.GetRunId() + "\x00" + p.GetIdempotencyKey()
}

func (s *Store) lockFor(id string) *sync.Mutex {
	var h uint32
	for i := 0; i < len(id); i++ {
		h = h*31 + uint32(id[i])
	}
	return &s.locks[h%uint32(len(s.locks))]
}

// Create durably stores a new proposal. When a proposal with the same agent,
// run and idempotency key exists, it returns that one and created=false.
func (s *Store) Create(ctx context.Context, rec *Record) (_ *Record, created bool, err error) {
	if err := s.writable(); err != nil {
		return nil, false, err
	}
	key := idemKey(rec.Proposal)
	if key != "" {
		for {
			existing, writing, err := s.reserve(key, rec.Proposal.GetProposalId())
			if err != nil {
				return nil, false, err
			}
			if existing != "" {
				got, err := s.Get(existing)
				return got, false, err
			}
			if writing == "" {
				break // reserved for us
			}
			// A concurrent Create of the same key is writing: wait for it.
			select {
			case <-ctx.Done():
				return nil, false, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		defer func() {
			s.mu.Lock()
			delete(s.reserved, key)
			s.mu.Unlock()
		}()
	}
	rec = rec.Clone()
	rec.Rev = 1
	if err := s.persist(ctx, rec); err != nil {
		return nil, false, err
	}
	return rec, true, nil
}

// reserve returns the proposal that holds key, or the id a concurrent
// Create is writing it under, or reserves key for id (both "").
func (s *Store) reserve(key, id string) (existing, writing string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.reserved[key]; ok {
		return "", w, nil
	}
	for _, e := range s.unindexed {
		if idemKey(e.rec.Proposal) == key {
			return e.rec.Proposal.GetProposalId(), "", nil
		}
	}
	if existing, err = s.idx.idemID(key); err != nil || existing != "" {
		return existing, "", err
	}
	s.reserved[key] = id
	return "", "", nil
}

func (s *Store) persist(ctx context.Context, rec *Record) error {
	if err := ctx.Err(); err != nil {
		return err // abandoned before anything was written
	}
	data, err := encode(rec)
	if err != nil {
		return fmt.Errorf("proposalstore: encode: %w", err)
	}
	return s.log.append(entry{rec: rec.Clone(), line: data})
}

// Get returns a copy of the proposal.
func (s *Store) Get(id string) (*Record, error) {
	s.mu.Lock()
	if r, ok := s.marked[id]; ok {
		s.mu.Unlock()
		return r.Clone(), nil
	}
	if e, ok := s.unindexed[id]; ok {
		s.mu.Unlock()
		return e.rec.Clone(), nil
	}
	s.mu.Unlock()
	data, err := s.idx.get(id)
	if err != nil {
		return nil, fmt.Errorf("proposalstore: index: %w", err)
	}
	if data == nil {
		return nil, ErrNotFound
	}
	rec, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("proposalstore: %s: %w", id, err)
	}
	return rec, nil
}

// Update applies fn to a copy of the proposal and durably stores the result;
// fn's error aborts the update. Updates of one proposal are serialised.
func (s *Store) Update(ctx context.Context, id string, fn func(*Record) error) (*Record, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	l := s.lockFor(id)
	l.Lock()
	defer l.Unlock()
	rec, err := s.Get(id)
	if err != nil {
		return nil, err
	}
	if err := fn(rec); err != nil {
		return nil, err
	}
	rec.Rev++
	if err := s.persist(ctx, rec); err != nil {
		return nil, err
	}
	s.mu.Lock()
	delete(s.marked, id)
	s.mu.Unlock()
	return rec, nil
}

// Mark applies fn to a copy held in memory only, without writing the
// document: for transient states (applying) whose loss in a crash is
// harmless because recovery derives them again from git. The copy is
// dropped at the proposal's next Update.
func (s *Store) Mark(id string, fn func(*Record)) (*Record, error) {
	l := s.lockFor(id)
	l.Lock()
	defer l.Unlock()
	rec, err := s.Get(id)
	if err != nil {
		return nil, err
	}
	fn(rec)
	s.mu.Lock()
	s.marked[id] = rec.Clone()
	s.mu.Unlock()
	return rec, nil
}

// Query selects proposals for List.
type Query struct {
	// Agents limits the result to these agents; nil = every agent.
	Agents []string
	// Status filters; UNSPECIFIED = any.
	Status    memoryv1.ProposalStatus
	PageSize  int
	PageToken string
}

// List returns proposals newest first, a page at a time. The page token is
// the id to continue after (ids sort by creation time).
func (s *Store) List(q Query) ([]*Record, string, error) {
	if q.PageSize <= 0 {
		q.PageSize = 50
	}
	if q.PageToken != "" && !strings.HasPrefix(q.PageToken, "proposal_") {
		return nil, "", fmt.Errorf("invalid page token")
	}
	s.mu.Lock()
	transient := make(map[string]meta, len(s.marked))
	for id, r := range s.marked {
		transient[id] = metaOf(r)
	}
	s.mu.Unlock()
	var ids []string
	var err error
	if q.Status != memoryv1.ProposalStatus_PROPOSAL_STATUS_UNSPECIFIED && !finished(q.Status) {
		ids, err = s.listActive(q, transient)
	} else {
		err = s.idx.list(q.Agents, q.PageToken, func(l listed) bool {
			st := l.status
			if t, ok := transient[l.id]; ok {
				st = t.status
			}
			if q.Status == memoryv1.ProposalStatus_PROPOSAL_STATUS_UNSPECIFIED || st == q.Status {
				ids = append(ids, l.id)
			}
			return len(ids) <= q.PageSize // one more than a page: is there a next one?
		})
	}
	if err != nil {
		return nil, "", fmt.Errorf("proposalstore: index: %w", err)
	}
	next := ""
	if len(ids) > q.PageSize {
		ids = ids[:q.PageSize]
		next = ids[len(ids)-1]
	}
	out := make([]*Record, 0, len(ids))
	for _, id := range ids {
		rec, err := s.Get(id)
		if err != nil {
			return nil, "", err
		}
		out = append(out, rec)
	}
	return out, next, nil
}

// listActive is List for an unfinished status: its proposals are among
// the unfinished ones (and the transient states), a set that does not grow
// with history, where walking every proposal newest first to find them
// did — the console's inbox asks for them every few seconds. It returns
// the ids of one page and one more, newest first.
func (s *Store) listActive(q Query, transient map[string]meta) ([]string, error) {
	active, err := s.idx.active()
	if err != nil {
		return nil, err
	}
	maps.Copy(active, transient)
	var after []byte
	if q.PageToken != "" {
		after = ageKey(q.PageToken)
	}
	type aged struct {
		id  string
		key []byte
	}
	var match []aged
	for id, m := range active {
		if m.status != q.Status || (q.Agents != nil && !slices.Contains(q.Agents, m.agent)) {
			continue
		}
		if k := ageKey(id); after == nil || bytes.Compare(k, after) < 0 {
			match = append(match, aged{id, k})
		}
	}
	slices.SortFunc(match, func(a, b aged) int { return bytes.Compare(b.key, a.key) })
	ids := make([]string, 0, min(len(match), q.PageSize+1))
	for _, a := range match[:min(len(match), q.PageSize+1)] {
		ids = append(ids, a.id)
	}
	return ids, nil
}

// WithStatus returns every unfinished proposal in one of the statuses,
// oldest first (the order the engine recovers them in).
func (s *Store) WithStatus(statuses ...memoryv1.ProposalStatus) ([]*Record, error) {
	docs, err := s.idx.unfinished(statuses)
	if err != nil {
		return nil, fmt.Errorf("proposalstore: index: %w", err)
	}
	out := make([]*Record, 0, len(docs))
	for _, d := range docs {
		rec, err := decode(d)
		if err != nil {
			return nil, fmt.Errorf("proposalstore: %w", err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// Len is the number of proposals (for metrics).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// Waiting is how many proposals of one agent wait for a person for one reason.
type Waiting struct {
	Agent  string
	Reason memoryv1.StatusReason
	Count  int
}

// AwaitingReview counts the proposals that wait for a person (pending or
// needs-review), by agent and reason, for the awaiting-review metric.
func (s *Store) AwaitingReview() []Waiting {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Waiting, 0, len(s.awaiting))
	for k, n := range s.awaiting {
		out = append(out, Waiting{Agent: k.agent, Reason: k.reason, Count: n})
	}
	return out
}

// NewID returns a new proposal id, "proposal_" + 26 lowercase base32
// characters whose first 10 encode the creation time, so ids sort by age
// (List is newest first by id). The alphabet is base32's "extended hex"
// one, 0-9 then a-v, which sorts like the values it encodes; the standard
// one (a-z then 2-7) does not, and ids a few milliseconds apart sorted
// the wrong way round half of the time (membench soak, issue #25).
func NewID(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return "proposal_" + strings.ToLower(idEncoding.EncodeToString(b[:]))
}

// idEncoding writes ids: base32's "extended hex" alphabet (0-9, a-v)
// keeps the byte order, so ids sort as text in time order. Ids written
// before used the standard alphabet (a-z, 2-7), whose text order is not
// its value order; the index orders both by what they encode (ageKey).
var (
	idEncoding       = base32.HexEncoding.WithPadding(base32.NoPadding)
	legacyIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)
)
