package streams

import (
	"slices"
	"strings"
	"sync"
)

// ShardKey names a shard: a query and one partition of its source queue.
type ShardKey struct{ Query, Partition [16]byte }

// Row is one key's state.
type Row struct {
	Value           []byte // JSON text
	UpdatedAtMicros int64
}

// shard is one (query, partition)'s rows.
type shard struct {
	rows   map[string]Row
	bytes  int64  // len(key)+len(value) over rows
	lsn    uint64 // the last change applied
	cycles uint64 // changes applied over the shard's life
	// dirtyFrom is the LSN of the oldest change not in a written snapshot
	// (0 = the snapshot file holds everything): the commit log must keep
	// it.
	dirtyFrom uint64
}

// Store is the registry and the shards in memory. All methods are safe for
// concurrent use. Writers of one shard are serialised by the caller (the
// broker holds the source partition's lock across a cycle), so changes of a
// shard arrive in LSN order.
type Store struct {
	mu       sync.Mutex
	byID     map[[16]byte]*Query
	byName   map[string]*Query
	shards   map[ShardKey]*shard
	regDirty bool // the registry changed since the registry file was written
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{byID: map[[16]byte]*Query{}, byName: map[string]*Query{}, shards: map[ShardKey]*shard{}}
}

// Lookup returns the query registered under name.
func (s *Store) Lookup(name string) (Query, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.byName[name]
	if !ok {
		return Query{}, false
	}
	return *q, true
}

// Query returns the query with id.
func (s *Store) Query(id [16]byte) (Query, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.byID[id]
	if !ok {
		return Query{}, false
	}
	return *q, true
}

// Registered is the query a registration entry at lsn leaves: q, with the
// reset LSN of old (the query of q's id before it, nil if none), which
// becomes lsn when the entry resets the state. It is the one rule of
// Store.ApplyQuery (the server) and Registry.Apply (comb dump).
func Registered(old *Query, lsn uint64, q Query, reset bool) Query {
	if old != nil {
		q.ResetLSN = old.ResetLSN
	}
	if reset && lsn > q.ResetLSN {
		q.ResetLSN = lsn
	}
	return q
}

// Apply applies a registration entry at lsn to r, as Store.ApplyQuery does
// to the server's registry: the query of q's id is replaced by Registered,
// or q is added. An entry at or below r.Covers is already in r and changes
// nothing.
func (r *Registry) Apply(lsn uint64, q Query, reset bool) {
	if lsn <= r.Covers {
		return
	}
	for i := range r.Queries {
		if r.Queries[i].ID == q.ID {
			r.Queries[i] = Registered(&r.Queries[i], lsn, q, reset)
			return
		}
	}
	r.Queries = append(r.Queries, Registered(nil, lsn, q, reset))
}

// ApplyQuery applies a registration entry at lsn: q replaces the query of its
// id; with reset, the query's resetLSN becomes lsn and its shards older than
// lsn are dropped. It returns the shards dropped (their files are the
// caller's to remove). Idempotent: applying an entry again changes nothing
// a later entry set.
func (s *Store) ApplyQuery(lsn uint64, q Query, reset bool) []ShardKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.byID[q.ID]
	if old != nil && old.Name != q.Name {
		delete(s.byName, old.Name)
	}
	q = Registered(old, lsn, q, reset)
	s.byID[q.ID] = &q
	s.byName[q.Name] = &q
	s.regDirty = true
	var dropped []ShardKey
	for k, sh := range s.shards {
		if k.Query == q.ID && sh.lsn < q.ResetLSN {
			delete(s.shards, k)
			dropped = append(dropped, k)
		}
	}
	return dropped
}

// SizeAfter is the number of live keys, and their bytes (keys and values),
// the shard of c would hold after c, to check the limits before c is
// committed.
func (s *Store) SizeAfter(c *Change) (keys int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows map[string]Row
	if sh := s.shards[ShardKey{c.Query, c.Partition}]; sh != nil {
		rows, bytes = sh.rows, sh.bytes
	}
	keys = len(rows)
	// now holds, for each key c touched, its value's length after the ops so
	// far (-1: absent).
	now := make(map[string]int, len(c.Ops))
	for _, op := range c.Ops {
		before, seen := now[op.Key]
		if !seen {
			before = -1
			if r, ok := rows[op.Key]; ok {
				before = len(r.Value)
			}
		}
		after := -1
		if op.Kind == OpUpsert {
			after = len(op.Value)
		}
		switch {
		case before < 0 && after >= 0:
			keys++
			bytes += int64(len(op.Key) + after)
		case before >= 0 && after < 0:
			keys--
			bytes -= int64(len(op.Key) + before)
		case before >= 0:
			bytes += int64(after - before)
		}
		now[op.Key] = after
	}
	return keys, bytes
}

// ApplyChange applies c, committed at lsn, and counts one cycle. It is
// skipped (false) when the query is unknown, when lsn is older than the
// query's last reset, or when the shard already holds lsn (a replay over a
// newer snapshot).
func (s *Store) ApplyChange(lsn uint64, c *Change) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.byID[c.Query]
	if !ok || lsn < q.ResetLSN {
		return false
	}
	k := ShardKey{c.Query, c.Partition}
	sh := s.shards[k]
	if sh == nil {
		sh = &shard{rows: map[string]Row{}}
		s.shards[k] = sh
	}
	if lsn <= sh.lsn {
		return false
	}
	for _, op := range c.Ops {
		if old, ok := sh.rows[op.Key]; ok {
			sh.bytes -= int64(len(op.Key) + len(old.Value))
			delete(sh.rows, op.Key)
		}
		if op.Kind == OpUpsert {
			sh.rows[op.Key] = Row{Value: op.Value, UpdatedAtMicros: op.UpdatedAtMicros}
			sh.bytes += int64(len(op.Key) + len(op.Value))
		}
	}
	sh.lsn = lsn
	sh.cycles++
	if sh.dirtyFrom == 0 {
		sh.dirtyFrom = lsn
	}
	return true
}

// Filter selects the rows of Rows; its conditions are AND-ed.
type Filter struct {
	Keys      []string // when non-empty, only these keys
	KeyPrefix string   // when non-empty, only keys starting with it
	Match     func(value []byte) bool
}

// Rows returns the rows of shard k that f selects, sorted by key. Values
// alias the store's (they are never modified in place), so only the key
// filters run under the store's lock: Match (a JSON decode per row) and the
// sort run after it, and a large shard's read does not hold up every cycle.
func (s *Store) Rows(k ShardKey, f Filter) []KeyRow {
	out := s.rowsByKey(k, f)
	if f.Match != nil {
		kept := out[:0]
		for _, r := range out {
			if f.Match(r.Value) {
				kept = append(kept, r)
			}
		}
		out = kept
	}
	sortRows(out)
	return out
}

// rowsByKey is Rows without Match and the order, under the lock.
func (s *Store) rowsByKey(k ShardKey, f Filter) []KeyRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.shards[k]
	if sh == nil {
		return nil
	}
	var out []KeyRow
	if len(f.Keys) > 0 {
		seen := make(map[string]bool, len(f.Keys))
		for _, key := range f.Keys {
			if r, ok := sh.rows[key]; ok && !seen[key] && strings.HasPrefix(key, f.KeyPrefix) {
				seen[key] = true
				out = append(out, KeyRow{Key: key, Row: r})
			}
		}
		return out
	}
	for key, r := range sh.rows {
		if strings.HasPrefix(key, f.KeyPrefix) {
			out = append(out, KeyRow{Key: key, Row: r})
		}
	}
	return out
}

// sortRows sorts rows by key.
func sortRows(rows []KeyRow) {
	slices.SortFunc(rows, func(a, b KeyRow) int { return strings.Compare(a.Key, b.Key) })
}

// DropPartitions drops the shards of the partitions ids names (their queue
// was deleted) and returns them; the queries stay registered.
func (s *Store) DropPartitions(gone func(partition [16]byte) bool) []ShardKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var dropped []ShardKey
	for k := range s.shards {
		if gone(k.Partition) {
			delete(s.shards, k)
			dropped = append(dropped, k)
		}
	}
	return dropped
}
