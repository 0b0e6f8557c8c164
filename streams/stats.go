package streams

import "sort"

// QueryStats is a query with the size of its state.
type QueryStats struct {
	Query
	Shards int   // shards holding at least one key
	Keys   int   // live keys over its shards
	Bytes  int64 // bytes of keys and values over its shards
	Cycles uint64
}

// Queries lists the registered queries by name, with their state size.
func (s *Store) Queries() []QueryStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	by := make(map[[16]byte]*QueryStats, len(s.byID))
	out := make([]QueryStats, 0, len(s.byID))
	for _, q := range s.byID {
		out = append(out, QueryStats{Query: *q})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := range out {
		by[out[i].ID] = &out[i]
	}
	for k, sh := range s.shards {
		st := by[k.Query]
		if st == nil {
			continue
		}
		if len(sh.rows) > 0 {
			st.Shards++
		}
		st.Keys += len(sh.rows)
		st.Bytes += sh.bytes
		st.Cycles += sh.cycles
	}
	return out
}

// Totals are the store's process-wide numbers.
type Totals struct {
	Queries int
	Keys    int
	Bytes   int64
}

// Totals counts queries, live keys and their bytes.
func (s *Store) Totals() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := Totals{Queries: len(s.byID)}
	for _, sh := range s.shards {
		t.Keys += len(sh.rows)
		t.Bytes += sh.bytes
	}
	return t
}
