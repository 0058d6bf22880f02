// Package proposalstore keeps proposals durable as JSON documents in the
// object store, so the write plane can move to any host once the store is
// MinIO: a log of whole documents, written in batches (log.go). A proposal
// or a change of it is acknowledged only after it is durably written; an
// in-memory index, rebuilt from the log at start-up, answers queries.
package proposalstore

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
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
}

// Clone returns a deep copy.
func (r *Record) Clone() *Record {
	return &Record{Proposal: proto.Clone(r.Proposal).(*memoryv1.Proposal), BaseCommit: r.BaseCommit, BaseVersion: r.BaseVersion}
}

// document is the JSON shape on disk; the proposal keeps the API's JSON form
// so a person reading the bucket sees the same fields as the REST API.
type document struct {
	Schema      int             `json:"schema"`
	Proposal    json.RawMessage `json:"proposal"`
	BaseCommit  string          `json:"baseCommit,omitempty"`
	BaseVersion int32           `json:"baseVersion"`
}

// encode returns the document as one line of JSON.
func encode(r *Record) ([]byte, error) {
	p, err := protojson.Marshal(r.Proposal)
	if err != nil {
		return nil, err
	}
	// Marshal compacts the raw proposal too: one line.
	return json.Marshal(document{Schema: 1, Proposal: p, BaseCommit: r.BaseCommit, BaseVersion: r.BaseVersion})
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
	return &Record{Proposal: p, BaseCommit: doc.BaseCommit, BaseVersion: doc.BaseVersion}, nil
}

// Store is the durable proposal store with its in-memory index.
type Store struct {
	logger *slog.Logger

	locks [64]sync.Mutex // per-proposal write locks, striped by id

	log     *groupLog
	compact *compactor

	mu      sync.RWMutex
	byID    map[string]*Record
	byAgent map[string][]string // proposal ids in creation (= id) order
	idem    map[string]string   // idempotency key -> proposal id
}

// Open loads every proposal: the documents earlier versions wrote, then the
// log in batch order. Close stops its background merges.
func Open(ctx context.Context, blobs blob.Store, logger *slog.Logger) (*Store, error) {
	s := &Store{logger: logger, byID: map[string]*Record{}, byAgent: map[string][]string{}, idem: map[string]string{}}
	var found []segment
	for info, err := range blobs.List(ctx, Prefix) {
		if err != nil {
			return nil, fmt.Errorf("proposalstore: list: %w", err)
		}
		if g, ok := parseSegmentKey(info.Key); ok {
			found = append(found, g)
			continue
		}
		data, _, err := blob.GetBytes(ctx, blobs, info.Key)
		if err != nil {
			return nil, fmt.Errorf("proposalstore: read %s: %w", info.Key, err)
		}
		s.load(info.Key, data)
	}
	live, covered := liveSegments(found)
	next := uint64(0)
	for _, g := range live {
		lines, err := readSegment(ctx, blobs, g)
		if err != nil {
			return nil, err
		}
		for _, line := range lines {
			s.load(g.key(), line)
		}
		next = g.hi + 1
	}
	for _, g := range covered {
		if err := blobs.Delete(ctx, g.key()); err != nil {
			logger.Warn("merged proposal log segment not deleted", "key", g.key(), "err", err)
		}
	}
	for agent := range s.byAgent {
		slices.Sort(s.byAgent[agent])
	}
	s.compact = newCompactor(blobs, logger, live)
	s.log = newGroupLog(blobs, next, s.compact.add)
	return s, nil
}

// load indexes one document; a later one of the same proposal replaces it.
func (s *Store) load(where string, data []byte) {
	rec, err := decode(data)
	if err != nil {
		// A document we cannot read is kept aside, not silently dropped.
		s.logger.Error("unreadable proposal document left in place", "key", where, "err", err)
		return
	}
	s.index(rec)
}

// Close stops the log's background merges.
func (s *Store) Close() { s.compact.close() }

func idemKey(p *memoryv1.Proposal) string {
	if p.GetIdempotencyKey() == "" {
		return ""
	}
	return p.GetAgentId() + "\x00" + p.GetRunId() + "\x00" + p.GetIdempotencyKey()
}

// index adds rec to the maps; the caller holds mu (or is Open).
func (s *Store) index(rec *Record) {
	id := rec.Proposal.GetProposalId()
	if _, ok := s.byID[id]; !ok {
		s.byAgent[rec.Proposal.GetAgentId()] = append(s.byAgent[rec.Proposal.GetAgentId()], id)
	}
	s.byID[id] = rec
	if k := idemKey(rec.Proposal); k != "" {
		s.idem[k] = id
	}
}

func (s *Store) lockFor(id string) *sync.Mutex {
	var h uint32
	for i := 0; i < len(id); i++ {
		h = h*31 + uint32(id[i])
	}
	return &s.locks[h%uint32(len(s.locks))]
}

// NewID returns a new proposal id, "proposal_" + 26 lowercase base32
// characters whose first 10 encode the creation time, so ids sort by age.
func NewID(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return "proposal_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// Create durably stores a new proposal. When a proposal with the same agent,
// run and idempotency key exists, it returns that one and created=false.
func (s *Store) Create(ctx context.Context, rec *Record) (_ *Record, created bool, err error) {
	key := idemKey(rec.Proposal)
	s.mu.Lock()
	if id, ok := s.idem[key]; ok && key != "" {
		existing := s.byID[id]
		s.mu.Unlock()
		if existing == nil { // reserved by a concurrent Create still writing
			return s.waitFor(ctx, id)
		}
		return existing.Clone(), false, nil
	}
	if key != "" {
		s.idem[key] = rec.Proposal.GetProposalId() // reserve before the slow write
	}
	s.mu.Unlock()

	if err := s.persist(ctx, rec); err != nil {
		if key != "" {
			s.mu.Lock()
			delete(s.idem, key)
			s.mu.Unlock()
		}
		return nil, false, err
	}
	s.mu.Lock()
	s.index(rec.Clone())
	s.mu.Unlock()
	return rec.Clone(), true, nil
}

// waitFor waits for a concurrent Create of the same idempotency key.
func (s *Store) waitFor(ctx context.Context, id string) (*Record, bool, error) {
	for {
		if rec, err := s.Get(id); err == nil {
			return rec, false, nil
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *Store) persist(ctx context.Context, rec *Record) error {
	if err := ctx.Err(); err != nil {
		return err // abandoned before anything was written
	}
	data, err := encode(rec)
	if err != nil {
		return fmt.Errorf("proposalstore: encode: %w", err)
	}
	return s.log.append(data)
}

// Get returns a copy of the proposal.
func (s *Store) Get(id string) (*Record, error) {
	s.mu.RLock()
	rec, ok := s.byID[id]
	s.mu.RUnlock()
	if !ok {
		return nil, ErrNotFound
	}
	return rec.Clone(), nil
}

// Update applies fn to a copy of the proposal and durably stores the result;
// fn's error aborts the update. Updates of one proposal are serialised.
func (s *Store) Update(ctx context.Context, id string, fn func(*Record) error) (*Record, error) {
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
	if err := s.persist(ctx, rec); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.index(rec.Clone())
	s.mu.Unlock()
	return rec, nil
}

// Mark applies fn to the in-memory copy only, without writing the document:
// for transient states (applying) whose loss in a crash is harmless because
// recovery derives them again from git.
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
	s.index(rec.Clone())
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	var ids []string
	agents := q.Agents
	if agents == nil {
		for a := range s.byAgent {
			agents = append(agents, a)
		}
	}
	for _, a := range agents {
		ids = append(ids, s.byAgent[a]...)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	var out []*Record
	for _, id := range ids {
		if q.PageToken != "" && id >= q.PageToken {
			continue
		}
		rec := s.byID[id]
		if q.Status != memoryv1.ProposalStatus_PROPOSAL_STATUS_UNSPECIFIED && rec.Proposal.GetStatus() != q.Status {
			continue
		}
		if len(out) == q.PageSize {
			return out, out[len(out)-1].Proposal.GetProposalId(), nil
		}
		out = append(out, rec.Clone())
	}
	return out, "", nil
}

// WithStatus returns every proposal in one of the statuses, oldest first
// (the order the engine recovers them in).
func (s *Store) WithStatus(statuses ...memoryv1.ProposalStatus) []*Record {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*Record
	for _, rec := range s.byID {
		if slices.Contains(statuses, rec.Proposal.GetStatus()) {
			out = append(out, rec.Clone())
		}
	}
	slices.SortFunc(out, func(a, b *Record) int {
		return strings.Compare(a.Proposal.GetProposalId(), b.Proposal.GetProposalId())
	})
	return out
}

// Len is the number of proposals (for metrics).
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byID)
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	type key struct {
		agent  string
		reason memoryv1.StatusReason
	}
	counts := map[key]int{}
	for _, rec := range s.byID {
		switch rec.Proposal.GetStatus() {
		case memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING, memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW:
			counts[key{rec.Proposal.GetAgentId(), rec.Proposal.GetReason()}]++
		}
	}
	out := make([]Waiting, 0, len(counts))
	for k, n := range counts {
		out = append(out, Waiting{Agent: k.agent, Reason: k.reason, Count: n})
	}
	return out
}
