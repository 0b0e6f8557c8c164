package notes

import (
	"sort"
)

// AnyDeleted reports whether any tombstone is held: the pop path asks this
// first so that a broker without deletions pays one atomic load per claim.
func (s *Store) AnyDeleted() bool { return s.nDeleted.Load() > 0 }

// DeletionGeneration counts the tombstones added and pruned since the store
// opened: a cache of counts that skip deleted messages (report's DLQ counts)
// is current while it has not moved.
func (s *Store) DeletionGeneration() uint64 { return s.gen.Load() }

// AnyDeletedIn reports whether any offset of partition carries a tombstone.
func (s *Store) AnyDeletedIn(partition [16]byte) bool {
	if !s.AnyDeleted() {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	pn := s.parts[partition]
	return pn != nil && len(pn.deleted) > 0
}

// Deleted reports whether ref carries a tombstone.
func (s *Store) Deleted(ref MessageRef) bool {
	if !s.AnyDeleted() {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	pn := s.parts[ref.Partition]
	if pn == nil {
		return false
	}
	_, ok := pn.deleted[ref.Offset]
	return ok
}

// DeletedCount returns how many offsets of partition in [from, to] carry a
// tombstone. O(tombstones of the partition).
func (s *Store) DeletedCount(partition [16]byte, from, to uint64) int {
	if !s.AnyDeleted() {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	pn := s.parts[partition]
	if pn == nil {
		return 0
	}
	n := 0
	for off := range pn.deleted {
		if off >= from && off <= to {
			n++
		}
	}
	return n
}

// Traces returns ref's trace events, oldest first (append order; a copy).
func (s *Store) Traces(ref MessageRef) []Trace {
	s.mu.RLock()
	defer s.mu.RUnlock()
	pn := s.parts[ref.Partition]
	if pn == nil {
		return nil
	}
	es := pn.traces[ref.Offset]
	out := make([]Trace, 0, len(es))
	for _, e := range es {
		out = append(out, e.Trace)
	}
	return out
}

// ByName returns the events carrying name, newest first (by creation time,
// then id), the page [offset, offset+limit), and how many there are in all.
func (s *Store) ByName(name string, limit, offset int) ([]Trace, int) {
	s.mu.RLock()
	all := make([]Trace, 0, len(s.byName[name]))
	for _, e := range s.byName[name] {
		if !e.dead {
			all = append(all, e.Trace)
		}
	}
	s.mu.RUnlock()
	sort.Slice(all, func(i, j int) bool {
		if all[i].CreatedMicros != all[j].CreatedMicros {
			return all[i].CreatedMicros > all[j].CreatedMicros
		}
		return string(all[i].ID[:]) > string(all[j].ID[:])
	})
	total := len(all)
	if offset >= total {
		return []Trace{}, total
	}
	all = all[max(offset, 0):]
	return all[:min(max(limit, 0), len(all))], total
}

// NameStat is one trace name of GET /api/v1/traces/names (spec 9.3).
type NameStat struct {
	Name           string
	Traces         int   // events carrying the name
	Messages       int   // distinct messages among them
	LastSeenMicros int64 // newest event's creation time
}

// Names returns every trace name, most recently seen first (then by name),
// the page [offset, offset+limit), and how many names there are.
func (s *Store) Names(limit, offset int) ([]NameStat, int) {
	s.mu.RLock()
	all := make([]NameStat, 0, len(s.byName))
	for name, es := range s.byName {
		st := NameStat{Name: name}
		msgs := make(map[MessageRef]struct{})
		for _, e := range es {
			if e.dead {
				continue
			}
			st.Traces++
			msgs[e.MessageRef] = struct{}{}
			st.LastSeenMicros = max(st.LastSeenMicros, e.CreatedMicros)
		}
		if st.Traces > 0 {
			st.Messages = len(msgs)
			all = append(all, st)
		}
	}
	s.mu.RUnlock()
	sort.Slice(all, func(i, j int) bool {
		if all[i].LastSeenMicros != all[j].LastSeenMicros {
			return all[i].LastSeenMicros > all[j].LastSeenMicros
		}
		return all[i].Name < all[j].Name
	})
	total := len(all)
	if offset >= total {
		return []NameStat{}, total
	}
	all = all[max(offset, 0):]
	return all[:min(limit, len(all))], total
}
