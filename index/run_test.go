package index

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runEntries returns n entries for offsets first, first+2, ... with hashes spread over
// the key space and two equal hashes (a collision) across the first page boundary.
func runEntries(n int, first uint64) []RunEntry {
	es := make([]RunEntry, n)
	for i := range es {
		es[i] = RunEntry{Hash: HashTxn(fmt.Sprintf("tx-%d", i)), Offset: first + 2*uint64(i)}
	}
	if n > RunPageEntries {
		SortRunEntries(es)
		es[RunPageEntries].Hash = es[RunPageEntries-1].Hash
	}
	SortRunEntries(es)
	return es
}

func scanRunAll(t *testing.T, b []byte) (RunHeader, []RunEntry) {
	t.Helper()
	var got []RunEntry
	h, err := ScanRun(b, func(_ int, e RunEntry) { got = append(got, e) })
	require.NoError(t, err)
	return h, got
}

func TestRunRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, RunPageEntries, RunPageEntries + 1, 3*RunPageEntries + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			es := runEntries(n, 10)
			last := uint64(10 + 2*n)
			b := EncodeRun(10, last, es)
			h, got := scanRunAll(t, b)
			pages := (n + RunPageEntries - 1) / RunPageEntries
			assert.Equal(t, RunHeader{Count: n, First: 10, Last: last, Check: binary.LittleEndian.Uint32(b[28:])}, h)
			assert.Equal(t, pages, h.Pages())
			assert.Equal(t, int64(RunHeaderSize+n*RunEntrySize+4*pages), h.Size())
			assert.Equal(t, int64(len(b)), h.Size())
			if n == 0 {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, es, got)
			// Each page read on its own verifies and yields its slice of the entries.
			for k := 0; k < pages; k++ {
				at, cnt := h.Page(k)
				ents, err := CheckRunPage(h, k, b[at:at+int64(cnt*RunEntrySize+4)])
				require.NoError(t, err)
				for i := 0; i < cnt; i++ {
					assert.Equal(t, es[k*RunPageEntries+i], RunEntryAt(ents, i))
				}
			}
		})
	}
}

// docs/format.md section 4: the header check covers the header, each page's check covers
// the page and binds it to its run and place, so every single flipped bit fails the scan.
func TestRunEveryBitFlipIsCaught(t *testing.T) {
	orig := EncodeRun(1, 1000, runEntries(RunPageEntries+3, 1))
	for pos := range orig {
		for bit := 0; bit < 8; bit++ {
			b := append([]byte(nil), orig...)
			b[pos] ^= 1 << bit
			_, err := ScanRun(b, nil)
			require.ErrorIsf(t, err, ErrRun, "byte %d bit %d", pos, bit)
		}
	}
}

func TestRunPagesAreBoundToTheirRunAndPlace(t *testing.T) {
	a := EncodeRun(1, 2000, runEntries(2*RunPageEntries, 1))
	h, err := ParseRunHeader(a)
	require.NoError(t, err)
	at0, _ := h.Page(0)
	at1, _ := h.Page(1)
	page0 := a[at0:at1]
	page1 := a[at1:]
	_, err = CheckRunPage(h, 1, page0)
	assert.ErrorIs(t, err, ErrRun, "page 0 read as page 1")
	_, err = CheckRunPage(h, 0, page1)
	assert.ErrorIs(t, err, ErrRun, "page 1 read as page 0")

	// The same entries in a run with another header (another first offset).
	b := EncodeRun(2, 2000, runEntries(2*RunPageEntries, 2))
	hb, err := ParseRunHeader(b)
	require.NoError(t, err)
	_, err = CheckRunPage(hb, 0, page0)
	assert.ErrorIs(t, err, ErrRun, "a page of another run")

	cases := map[string][]byte{
		"short":           a[:len(a)-1],
		"longer":          append(append([]byte(nil), a...), 0),
		"header only":     a[:RunHeaderSize],
		"another version": append([]byte("CMBR\x02"), a[5:]...),
		"empty":           nil,
	}
	for name, b := range cases {
		_, err := ScanRun(b, nil)
		assert.ErrorIsf(t, err, ErrRun, name)
	}
}

// FuzzRun: ScanRun never panics, and a file it accepts is exactly what EncodeRun writes
// for the entries it yielded (so nothing unverified is ever accepted).
func FuzzRun(f *testing.F) {
	f.Add(EncodeRun(1, 1, nil))
	f.Add(EncodeRun(5, 40, runEntries(3, 5)))
	f.Add(EncodeRun(1, 1000, runEntries(RunPageEntries+1, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got []RunEntry
		h, err := ScanRun(data, func(_ int, e RunEntry) { got = append(got, e) })
		if err != nil {
			return
		}
		if len(got) != h.Count {
			t.Fatalf("header says %d entries, scan yielded %d", h.Count, len(got))
		}
		if re := EncodeRun(h.First, h.Last, got); string(re) != string(data) {
			t.Fatalf("accepted run does not re-encode to itself")
		}
	})
}

func TestTableResetAndEach(t *testing.T) {
	var tb Table
	want := map[[2]uint64]bool{}
	for i := uint64(1); i <= 1000; i++ { // past a doubling, so Each also walks the old table
		tb.Insert(i*7919, i)
		want[[2]uint64{i * 7919, i}] = true
	}
	got := map[[2]uint64]bool{}
	tb.Each(func(h, off uint64) { got[[2]uint64{h, off}] = true })
	assert.Equal(t, want, got)
	size := tb.Bytes()
	tb.Reset()
	assert.Equal(t, 0, tb.Len())
	tb.Each(func(h, off uint64) { t.Fatalf("entry (%d, %d) after Reset", h, off) })
	tb.Insert(5, 6)
	var offs []uint64
	tb.Lookup(5, func(off uint64) bool { offs = append(offs, off); return true })
	assert.Equal(t, []uint64{6}, offs)
	assert.LessOrEqual(t, tb.Bytes(), size, "Reset keeps the slots")
}

// BenchmarkBuildFilter: building a run's filter (5 bits a key, k = 3: a seal: 6,144 ids; a
// merge at the top of a partition of ~1 M ids: 786,432). ns/key is ns/op divided by the keys. (A binary fuse filter,
// 1/256 false positives, was tried: 180-220 ns/key here against 12-17 for this Bloom filter,
// and merges rebuild filters at every level, so its fewer page reads did not pay.)
func BenchmarkBuildFilter(b *testing.B) {
	for _, n := range []int{6_144, 786_432} {
		keys := make([]uint64, n)
		for i := range keys {
			keys[i] = HashTxn(fmt.Sprintf("tx-%d", i))
		}
		slices.Sort(keys) // a run's order
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				f := NewKFilter(n, 5, 3, 32)
				for _, k := range keys {
					f.Add(k)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}

// SortRunEntries gives the (hash, offset) order of a comparison sort for every input: uniform
// hashes, equal hashes with offsets in any order, and hashes crafted to share their top bits
// (one large bucket).
func TestSortRunEntriesMatchesComparisonSort(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash func(i int) uint64
	}{
		{"uniform", func(i int) uint64 { return HashTxn(fmt.Sprint("tx-", i)) }},
		{"collisions", func(i int) uint64 { return HashTxn(fmt.Sprint("tx-", i%37)) }},
		{"shared top bits", func(i int) uint64 { return 0xabc<<52 | HashTxn(fmt.Sprint("tx-", i))>>12 }},
		{"all equal", func(int) uint64 { return 7 }},
	} {
		for _, n := range []int{0, 1, 63, 64, 100, 6144} {
			t.Run(fmt.Sprint(tc.name, "/", n), func(t *testing.T) {
				es := make([]RunEntry, n)
				for i := range es {
					es[i] = RunEntry{Hash: tc.hash(i), Offset: uint64((i * 7919) % (n + 1))}
				}
				want := slices.Clone(es)
				sortRunEntriesCmp(want)
				SortRunEntries(es)
				require.Equal(t, want, es)
			})
		}
	}
}

// BenchmarkSortRunEntries: what a seal sorts (a full active table of 6,144 ids).
func BenchmarkSortRunEntries(b *testing.B) {
	src := make([]RunEntry, 6144)
	for i := range src {
		src[i] = RunEntry{Hash: HashTxn(fmt.Sprint("run1-w3-", i)), Offset: uint64(i + 1)}
	}
	es := make([]RunEntry, len(src))
	b.ReportAllocs()
	for b.Loop() {
		copy(es, src)
		SortRunEntries(es)
	}
}

// KFilter never answers "no" for a key it holds, and its false-positive rate follows its size
// and k (the dedup index's two shapes: the partition's filter and a run's).
func TestKFilterFalsePositiveRate(t *testing.T) {
	for _, c := range []struct {
		bits    float64
		k, seed int
		maxFP   float64
	}{{5, 3, 0, 0.11}, {5, 3, 32, 0.11}, {10, 6, 0, 0.015}} {
		f := NewKFilter(100_000, c.bits, c.k, c.seed)
		for i := range 100_000 {
			f.Add(HashTxn(fmt.Sprintf("in-%d", i)))
		}
		for i := range 100_000 {
			require.True(t, f.MayContain(HashTxn(fmt.Sprintf("in-%d", i))))
		}
		fp := 0
		for i := range 100_000 {
			if f.MayContain(HashTxn(fmt.Sprintf("out-%d", i))) {
				fp++
			}
		}
		rate := float64(fp) / 100_000
		t.Logf("bits %.1f k %d: false positives %.4f, %d bytes", c.bits, c.k, rate, f.Bytes())
		assert.Less(t, rate, c.maxFP)
	}
}
