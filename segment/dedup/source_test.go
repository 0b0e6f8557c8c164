package dedup

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
)

// synthSource is the in-memory twin of a partition log: the record at offset
// o (first ≤ o < next) carries transaction id txidAt(o), unless o is in
// noTxid or in a gap (a quarantined range: no record at all). It stores
// nothing per record, so a benchmark can index 10 M ids.
type synthSource struct {
	mu     sync.Mutex
	first  uint64
	next   uint64
	gaps   [][2]uint64 // [from, to] offsets with no record
	reads  int         // Read calls
	froms  []uint64    // each Read's from
	failAt uint64      // a Read reaching this offset fails (0: never)
	// maxRead caps the records of one Read (0: none): a benchmark's reads cost about what a
	// segment's decode does, not 1,024 records' worth of formatting.
	maxRead int
}

func txidAt(off uint64) string { return fmt.Sprintf("tx-%d", off) }

func idAt(off uint64) (id [16]byte) {
	for i := range 8 {
		id[i] = byte(off >> (8 * i))
	}
	id[15] = 0xd1
	return id
}

func (s *synthSource) FirstOffset() uint64 { s.mu.Lock(); defer s.mu.Unlock(); return s.first }
func (s *synthSource) NextOffset() uint64  { s.mu.Lock(); defer s.mu.Unlock(); return s.next }

func (s *synthSource) inGap(off uint64) bool {
	for _, g := range s.gaps {
		if off >= g[0] && off <= g[1] {
			return true
		}
	}
	return false
}

func (s *synthSource) Read(from uint64, maxMsgs, _ int, fn func(uint64, string, [16]byte)) (int, error) {
	s.mu.Lock()
	first, next := s.first, s.next
	s.reads++
	s.froms = append(s.froms, from)
	fail := s.failAt
	if s.maxRead > 0 {
		maxMsgs = min(maxMsgs, s.maxRead)
	}
	s.mu.Unlock()
	from = max(from, first)
	n := 0
	for off := from; off < next && n < max(maxMsgs, 1); off++ {
		if fail != 0 && off >= fail {
			return 0, fmt.Errorf("synthetic read failure at offset %d", off)
		}
		if s.inGap(off) {
			continue
		}
		fn(off, txidAt(off), idAt(off))
		n++
	}
	return n, nil
}

// push appends n records.
func (s *synthSource) push(n int) (base uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	base = s.next
	s.next += uint64(n)
	return base
}

// newTestIndex makes an Index over src in a fresh in-memory directory /p.
func newTestIndex(t testing.TB, fs vfs.FS, src Source, runEntries int) *Index {
	t.Helper()
	require.NoError(t, fs.MkdirAll("/p"))
	x := &Index{}
	x.Init(Config{FS: fs, Dir: "/p", Source: src, RunEntries: runEntries})
	x.SetOpenNext(src.NextOffset())
	t.Cleanup(func() { _ = x.Drop() })
	return x
}

// appendTo records n new records of src in x (as segment's Append does after publishing).
func appendTo(x *Index, src *synthSource, n int) {
	base := src.push(n)
	x.Append(base, n, func(i int) uint64 { return hashOf(txidAt(base + uint64(i))) })
}

// find returns what x answers for txids, as offset by id.
func find(t testing.TB, x *Index, txids []string) map[string]uint64 {
	t.Helper()
	got := map[string]uint64{}
	require.NoError(t, x.Find(txids, nil, func(i int, off uint64, id [16]byte) {
		require.Equal(t, idAt(off), id, "message id of offset %d", off)
		got[txids[i]] = off
	}))
	return got
}
