package proposalstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// The index: a local, rebuildable view of the log in one bbolt file, so
// the process holds no proposal in memory and its heap does not grow with
// history. The log in the object store stays the truth: the index records
// the last batch it has taken in ("through"), Open replays the segments
// after it, and a missing or unreadable index is rebuilt from the whole log.
//
// Buckets:
//
//	docs    id → the proposal's document (one log line)
//	meta    id → status, reason, rev, agent (what counts and merges need
//	        without decoding a document)
//	order   age key → status, id (every proposal, oldest first; see ageKey)
//	agents  agent "\x00" age key → status, id (an agent's, oldest first)
//	idem    agent "\x00" run "\x00" key → id
//	active  id → meta, for proposals not yet finished (recovery, the
//	        awaiting-review counts)
//	state   "through" → the last batch taken in; "schema" → indexSchema
var (
	bucketDocs   = []byte("docs")
	bucketMeta   = []byte("meta")
	bucketOrder  = []byte("order")
	bucketAgents = []byte("agents")
	bucketIdem   = []byte("idem")
	bucketActive = []byte("active")
	bucketState  = []byte("state")

	keyThrough = []byte("through")
	keySchema  = []byte("schema")
	keyLegacy  = []byte("legacy-read")
)

// indexSchema changes when the buckets' layout does; an index of another
// schema is rebuilt.
const indexSchema = 2

var allBuckets = [][]byte{bucketDocs, bucketMeta, bucketOrder, bucketAgents, bucketIdem, bucketActive, bucketState}

// meta is what the index keeps beside a document.
type meta struct {
	status memoryv1.ProposalStatus
	reason memoryv1.StatusReason
	rev    uint64
	agent  string
}

func metaOf(r *Record) meta {
	return meta{status: r.Proposal.GetStatus(), reason: r.Proposal.GetReason(), rev: r.Rev, agent: r.Proposal.GetAgentId()}
}

func (m meta) encode() []byte {
	b := make([]byte, 10, 10+len(m.agent))
	b[0], b[1] = byte(m.status), byte(m.reason)
	binary.BigEndian.PutUint64(b[2:10], m.rev)
	return append(b, m.agent...)
}

func decodeMeta(b []byte) (meta, bool) {
	if len(b) < 10 {
		return meta{}, false
	}
	return meta{
		status: memoryv1.ProposalStatus(b[0]), reason: memoryv1.StatusReason(b[1]),
		rev: binary.BigEndian.Uint64(b[2:10]), agent: string(b[10:]),
	}, true
}

// finished reports whether a status is final: the proposal will not change
// again on its own.
func finished(s memoryv1.ProposalStatus) bool {
	switch s {
	case memoryv1.ProposalStatus_PROPOSAL_STATUS_APPLIED, memoryv1.ProposalStatus_PROPOSAL_STATUS_REJECTED, memoryv1.ProposalStatus_PROPOSAL_STATUS_FAILED:
		return true
	}
	return false
}

// awaitsReview reports whether a proposal in this status waits for a person.
func awaitsReview(s memoryv1.ProposalStatus) bool {
	return s == memoryv1.ProposalStatus_PROPOSAL_STATUS_PENDING || s == memoryv1.ProposalStatus_PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW
}

// ageKey orders proposal ids by creation: the 16 bytes an id encodes
// (milliseconds since 1970, then random bits). Ids are base32 with the
// "hex" alphabet, which sorts as text too; ids written before it (first
// character a–z: the standard alphabet, which does not) are decoded with
// theirs, so both kinds interleave by time. An id of neither form sorts
// after every other, by its text.
func ageKey(id string) []byte {
	body := strings.TrimPrefix(id, "proposal_")
	if len(body) == 26 {
		enc := idEncoding
		if body[0] >= 'a' && body[0] <= 'z' {
			enc = legacyIDEncoding
		}
		if b, err := enc.DecodeString(strings.ToUpper(body)); err == nil && len(b) == 16 {
			return b
		}
	}
	return append([]byte{0xff}, id...)
}

func agentKey(agent, id string) []byte { return append([]byte(agent+"\x00"), ageKey(id)...) }

// listValue is what order and agents hold: the status, then the id.
func listValue(status memoryv1.ProposalStatus, id string) []byte {
	return append([]byte{byte(status)}, id...)
}

// index is the bbolt file.
type index struct {
	db     *bolt.DB
	temp   bool // a temporary file removed at close
	marker syncMarker
}

// openIndex opens (or creates) the index at path; "" makes a temporary one.
// An index that cannot be opened, has another schema, or may have lost
// writes (see syncMarker) is moved aside and started empty: the caller
// rebuilds it from the log.
func openIndex(path string, logger interface{ Warn(string, ...any) }) (*index, error) {
	temp := path == ""
	if temp {
		f, err := os.CreateTemp("", "proposal-index-*.db")
		if err != nil {
			return nil, fmt.Errorf("proposalstore: index: %w", err)
		}
		path = f.Name()
		_ = f.Close()
		_ = os.Remove(path)
	}
	marker := syncMarker{path: path + ".open"}
	trusted, why := marker.check()
	opts := &bolt.Options{Timeout: 2 * time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType}
	var db *bolt.DB
	err := errors.New(why)
	if trusted {
		if db, err = bolt.Open(path, 0o600, opts); err == nil {
			if err = checkSchema(db); err != nil {
				_ = db.Close()
			}
		}
	}
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("proposalstore: index %s is held by another process", path)
		}
		aside := fmt.Sprintf("%s.unreadable-%d", path, time.Now().UnixNano())
		if rerr := os.Rename(path, aside); errors.Is(rerr, os.ErrNotExist) {
			aside = ""
		} else if rerr != nil {
			return nil, fmt.Errorf("proposalstore: index %s: %w (and it cannot be moved aside: %w)", path, err, rerr)
		}
		if aside != "" {
			logger.Warn("proposal index not trusted: moved aside, rebuilding it from the log", "path", path, "aside", aside, "why", err)
		}
		if db, err = bolt.Open(path, 0o600, opts); err != nil {
			return nil, fmt.Errorf("proposalstore: index %s: %w", path, err)
		}
	}
	// Without fsyncs the index costs a page write per batch; a process
	// crash loses nothing (the kernel keeps the pages), and a machine crash
	// is caught by the marker. Where the marker cannot tell, sync.
	db.NoSync = marker.bootID != ""
	if err := marker.set(); err != nil {
		_ = db.Close()
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketState).Put(keySchema, []byte{indexSchema})
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("proposalstore: index %s: %w", path, err)
	}
	return &index{db: db, temp: temp, marker: marker}, nil
}

// syncMarker tells whether an index written without fsyncs can be trusted.
// While the index is open, a file beside it names the machine's boot; a
// clean close syncs the index and removes it. Found at open, it means the
// process stopped without closing: after a process crash in the same boot
// every write is still in the kernel's page cache, so the index is whole;
// after a reboot it may not be, and is rebuilt from the log.
type syncMarker struct {
	path   string
	bootID string // "" where the boot cannot be told (not Linux)
}

func (m *syncMarker) check() (trusted bool, why string) {
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		m.bootID = strings.TrimSpace(string(b))
	}
	found, err := os.ReadFile(m.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true, ""
	case err != nil:
		return false, fmt.Sprintf("its open marker is unreadable: %v", err)
	case m.bootID == "" || strings.TrimSpace(string(found)) != m.bootID:
		return false, "the machine restarted while it was open (writes may be lost)"
	}
	return true, ""
}

// set writes the marker durably before the first unsynced write.
func (m *syncMarker) set() error {
	if m.bootID == "" {
		return nil
	}
	f, err := os.OpenFile(m.path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.WriteString(m.bootID)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = syncDir(filepath.Dir(m.path))
	}
	if err != nil {
		return fmt.Errorf("proposalstore: index marker: %w", err)
	}
	return nil
}

// clear removes the marker once the index is synced.
func (m *syncMarker) clear() error {
	if m.bootID == "" {
		return nil
	}
	if err := os.Remove(m.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return syncDir(filepath.Dir(m.path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}

// checkSchema fails for an index written with another layout.
func checkSchema(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		st := tx.Bucket(bucketState)
		if st == nil {
			return nil // new file
		}
		if v := st.Get(keySchema); len(v) != 1 || v[0] != indexSchema {
			return fmt.Errorf("index schema %v, want %d", v, indexSchema)
		}
		return nil
	})
}

// close syncs the index, then removes its open marker.
func (x *index) close() error {
	path := x.db.Path()
	err := x.db.Sync()
	if cerr := x.db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = x.marker.clear()
	}
	if x.temp {
		_ = os.Remove(path)
		_ = x.marker.clear()
	}
	return err
}

// through returns the last batch taken in (ok: there is one) and whether
// the legacy documents have been read.
func (x *index) through() (batch uint64, ok, legacy bool) {
	_ = x.db.View(func(tx *bolt.Tx) error {
		st := tx.Bucket(bucketState)
		if v := st.Get(keyThrough); len(v) == 8 {
			batch, ok = binary.BigEndian.Uint64(v), true
		}
		legacy = st.Get(keyLegacy) != nil
		return nil
	})
	return batch, ok, legacy
}

// entry is one document to take in.
type entry struct {
	rec  *Record
	line []byte
}

// change is what taking a document in did, for the in-memory counts.
type change struct {
	added       bool // a proposal the index did not know
	before, now meta
	known       bool // before is set
}

// put takes entries in, in order, in one transaction, and records through
// (when set). A document older than the indexed one (a lower rev) is
// skipped: replays and merges never move a proposal back.
func (x *index) put(entries []entry, through *uint64, legacy bool) ([]change, error) {
	var changes []change
	err := x.db.Update(func(tx *bolt.Tx) error {
		changes = changes[:0]
		docs, metas, agents, order := tx.Bucket(bucketDocs), tx.Bucket(bucketMeta), tx.Bucket(bucketAgents), tx.Bucket(bucketOrder)
		idem, active := tx.Bucket(bucketIdem), tx.Bucket(bucketActive)
		for _, e := range entries {
			id := []byte(e.rec.Proposal.GetProposalId())
			now := metaOf(e.rec)
			c := change{now: now}
			if old, ok := decodeMeta(metas.Get(id)); ok {
				if now.rev < old.rev {
					continue
				}
				c.before, c.known = old, true
				if old.agent != now.agent { // never happens; keep the index consistent anyway
					if err := agents.Delete(agentKey(old.agent, string(id))); err != nil {
						return err
					}
				}
			} else {
				c.added = true
			}
			m := now.encode()
			if err := docs.Put(id, e.line); err != nil {
				return err
			}
			if err := metas.Put(id, m); err != nil {
				return err
			}
			lv := listValue(now.status, string(id))
			if err := agents.Put(agentKey(now.agent, string(id)), lv); err != nil {
				return err
			}
			if err := order.Put(ageKey(string(id)), lv); err != nil {
				return err
			}
			if k := idemKey(e.rec.Proposal); k != "" {
				if err := idem.Put([]byte(k), id); err != nil {
					return err
				}
			}
			var err error
			if finished(now.status) {
				err = active.Delete(id)
			} else {
				err = active.Put(id, m)
			}
			if err != nil {
				return err
			}
			changes = append(changes, c)
		}
		st := tx.Bucket(bucketState)
		if through != nil {
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], *through)
			if err := st.Put(keyThrough, b[:]); err != nil {
				return err
			}
		}
		if legacy {
			return st.Put(keyLegacy, []byte{1})
		}
		return nil
	})
	return changes, err
}

// get returns a proposal's document, or nil.
func (x *index) get(id string) ([]byte, error) {
	var out []byte
	err := x.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketDocs).Get([]byte(id)); v != nil {
			out = bytes.Clone(v)
		}
		return nil
	})
	return out, err
}

// keep reports which log lines a merge keeps: every line that is not an
// older version of what the index holds (a lower rev; for documents from
// before revs, anything but the indexed document itself). Lines it cannot
// read, or of proposals it does not know, are kept.
func (x *index) keep(lines [][]byte) ([]bool, error) {
	out := make([]bool, len(lines))
	err := x.db.View(func(tx *bolt.Tx) error {
		docs, metas := tx.Bucket(bucketDocs), tx.Bucket(bucketMeta)
		for i, line := range lines {
			id, rev, ok := lineKey(line)
			if !ok {
				out[i] = true
				continue
			}
			m, known := decodeMeta(metas.Get([]byte(id)))
			switch {
			case !known || rev > m.rev:
				out[i] = true
			case rev == m.rev:
				out[i] = rev > 0 || bytes.Equal(line, docs.Get([]byte(id)))
			}
		}
		return nil
	})
	return out, err
}

// idemID returns the proposal holding an idempotency key, or "".
func (x *index) idemID(key string) (string, error) {
	var id string
	err := x.db.View(func(tx *bolt.Tx) error {
		id = string(tx.Bucket(bucketIdem).Get([]byte(key)))
		return nil
	})
	return id, err
}

// waitKey is one (agent, reason) of the awaiting-review counts.
type waitKey struct {
	agent  string
	reason memoryv1.StatusReason
}

// scan returns the number of proposals and how many of each agent wait
// for a person, by reason.
func (x *index) scan() (n int, awaiting map[waitKey]int, err error) {
	awaiting = map[waitKey]int{}
	err = x.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketMeta).Stats().KeyN
		return tx.Bucket(bucketActive).ForEach(func(_, v []byte) error {
			if m, ok := decodeMeta(v); ok && awaitsReview(m.status) {
				awaiting[waitKey{m.agent, m.reason}]++
			}
			return nil
		})
	})
	return n, awaiting, err
}

// unfinished returns the documents of the unfinished proposals whose
// status is one of statuses, in id (= age) order.
func (x *index) unfinished(statuses []memoryv1.ProposalStatus) ([][]byte, error) {
	var out [][]byte
	err := x.db.View(func(tx *bolt.Tx) error {
		docs := tx.Bucket(bucketDocs)
		return tx.Bucket(bucketActive).ForEach(func(k, v []byte) error {
			if m, ok := decodeMeta(v); ok && slices.Contains(statuses, m.status) {
				if d := docs.Get(k); d != nil {
					out = append(out, bytes.Clone(d))
				}
			}
			return nil
		})
	})
	return out, err
}

// active returns the unfinished proposals' ids and metas.
func (x *index) active() (map[string]meta, error) {
	out := map[string]meta{}
	err := x.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketActive).ForEach(func(k, v []byte) error {
			if m, ok := decodeMeta(v); ok {
				out[string(k)] = m
			}
			return nil
		})
	})
	return out, err
}

// listed is one proposal a list found: its id and stored status.
type listed struct {
	id     string
	status memoryv1.ProposalStatus
}

func decodeListed(v []byte) listed {
	if len(v) < 1 {
		return listed{}
	}
	return listed{id: string(v[1:]), status: memoryv1.ProposalStatus(v[0])}
}

// list walks proposals newest first, strictly older than the proposal
// after ("" = from the newest), of the given agents (nil = all), calling
// keep for each until it returns false.
func (x *index) list(agents []string, after string, keep func(listed) bool) error {
	var from []byte
	if after != "" {
		from = ageKey(after)
	}
	return x.db.View(func(tx *bolt.Tx) error {
		if agents == nil {
			c := tx.Bucket(bucketOrder).Cursor()
			for k, v := seekBefore(c, from, nil); k != nil; k, v = c.Prev() {
				if !keep(decodeListed(v)) {
					return nil
				}
			}
			return nil
		}
		// One cursor per agent, merged newest first.
		type head struct {
			c      *bolt.Cursor
			prefix []byte
			k, v   []byte
		}
		var heads []*head
		b := tx.Bucket(bucketAgents)
		for _, a := range agents {
			h := &head{c: b.Cursor(), prefix: []byte(a + "\x00")}
			h.k, h.v = seekBefore(h.c, from, h.prefix)
			if h.k != nil {
				heads = append(heads, h)
			}
		}
		for len(heads) > 0 {
			best := 0
			for i, h := range heads {
				if bytes.Compare(h.k[len(h.prefix):], heads[best].k[len(heads[best].prefix):]) > 0 {
					best = i
				}
			}
			h := heads[best]
			if !keep(decodeListed(h.v)) {
				return nil
			}
			if h.k, h.v = h.c.Prev(); h.k == nil || !bytes.HasPrefix(h.k, h.prefix) {
				heads = slices.Delete(heads, best, best+1)
			}
		}
		return nil
	})
}

// seekBefore positions c on the last key with prefix that sorts before
// prefix+after (after empty: the last key with prefix) and returns it, or
// nil. prefix is empty or ends in "\x00", so prefix with its last byte
// raised is the first key after all of prefix's.
func seekBefore(c *bolt.Cursor, after, prefix []byte) (k, v []byte) {
	switch {
	case len(after) > 0:
		k, _ = c.Seek(append(bytes.Clone(prefix), after...))
	case len(prefix) > 0:
		next := bytes.Clone(prefix)
		next[len(next)-1]++
		k, _ = c.Seek(next)
	}
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return nil, nil
	}
	return k, v
}
