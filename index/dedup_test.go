package index

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/record"
)

// dedupFile builds a version 2 dedup file with n entries: hash i·977, offset 10·i.
func dedupFile(n int) []byte {
	b := make([]byte, DedupHeaderSize)
	chain := PutDedupHeader(b, 0)
	for i := 1; i <= n; i++ {
		b = AppendDedupEntry(b, &chain, uint64(i)*977, uint64(10*i))
	}
	return b
}

type dedupEntry struct{ hash, offset uint64 }

func scanAll(t *testing.T, b []byte) (DedupScan, []dedupEntry) {
	t.Helper()
	var got []dedupEntry
	s, err := ScanDedup(b, func(i int, h, off uint64) {
		require.Equal(t, len(got), i)
		got = append(got, dedupEntry{h, off})
	})
	require.NoError(t, err)
	return s, got
}

func TestDedupFileRoundTrip(t *testing.T) {
	b := dedupFile(5)
	require.Len(t, b, DedupHeaderSize+5*DedupEntrySize)
	s, got := scanAll(t, b)
	assert.Equal(t, DedupScan{Entries: 5, End: int64(len(b)), Chain: binary.LittleEndian.Uint32(b[len(b)-4:]),
		Tail: record.TailClean, Resync: -1}, s)
	for i, e := range got {
		assert.Equal(t, dedupEntry{uint64(i+1) * 977, uint64(10 * (i + 1))}, e)
	}
	assert.Equal(t, s.Chain, DedupChainAt(b, s.End))

	// An appender that continues from Chain writes what one pass would have written.
	chain := s.Chain
	more := AppendDedupEntry(append([]byte(nil), b...), &chain, 6*977, 60)
	assert.Equal(t, dedupFile(6), more)
}

// docs/format.md section 4: each entry's check continues the CRC-32C from the check stored
// before it, so any single flipped bit fails the entry that holds it, and a verified entry
// after it tells damage (TailCorrupt) from a torn append.
func TestDedupEveryBitFlipIsCaught(t *testing.T) {
	const n = 6
	orig := dedupFile(n)
	for pos := 0; pos < len(orig); pos++ {
		for bit := 0; bit < 8; bit++ {
			b := append([]byte(nil), orig...)
			b[pos] ^= 1 << bit
			if pos < DedupHeaderSize {
				_, err := ScanDedup(b, nil)
				require.Errorf(t, err, "byte %d bit %d of the header", pos, bit)
				continue
			}
			k := (pos - DedupHeaderSize) / DedupEntrySize // the entry holding the bit
			inCheck := (pos-DedupHeaderSize)%DedupEntrySize >= 16
			s, got := scanAll(t, b)
			require.Equalf(t, k, s.Entries, "byte %d bit %d: entries before the damaged one", pos, bit)
			require.Len(t, got, k)
			require.Equal(t, int64(DedupHeaderSize+k*DedupEntrySize), s.End)
			next := k + 1 // the first entry that verifies again
			if inCheck {
				next = k + 2 // the entry after a damaged check chains from it
			}
			if next < n {
				require.Equalf(t, record.TailCorrupt, s.Tail, "byte %d bit %d", pos, bit)
				require.Equal(t, int64(DedupHeaderSize+next*DedupEntrySize), s.Resync)
			} else {
				require.Equalf(t, record.TailDamaged, s.Tail, "byte %d bit %d", pos, bit)
				require.Equal(t, int64(-1), s.Resync)
			}
			require.NotEmpty(t, s.Reason)
		}
	}
}

func TestDedupTails(t *testing.T) {
	full := dedupFile(4)
	entry := func(i int) []byte {
		return full[DedupHeaderSize+i*DedupEntrySize : DedupHeaderSize+(i+1)*DedupEntrySize]
	}
	dropped := append(append(append([]byte(nil), full[:DedupHeaderSize+DedupEntrySize]...), entry(2)...), entry(3)...)
	repeated := append(append([]byte(nil), full...), entry(3)...)
	var chain uint32
	hdr := make([]byte, DedupHeaderSize)
	chain = PutDedupHeader(hdr, 0)
	notIncreasing := AppendDedupEntry(AppendDedupEntry(hdr, &chain, 1, 5), &chain, 2, 5)
	cases := []struct {
		name    string
		b       []byte
		entries int
		tail    record.Tail
	}{
		{"header only", full[:DedupHeaderSize], 0, record.TailClean},
		{"partial last entry: a torn append", full[:len(full)-7], 3, record.TailTorn},
		{"zeros after the entries: an extension a crash cut short", append(append([]byte(nil), full...), make([]byte, 45)...), 4, record.TailZeros},
		{"garbage of full length at the end", append(append([]byte(nil), full...), []byte("twenty bytes of junk")...), 4, record.TailDamaged},
		{"an entry dropped from the middle breaks the chain", dropped, 1, record.TailCorrupt},
		{"an entry written twice breaks the chain", repeated, 4, record.TailDamaged},
		{"an offset that does not increase", notIncreasing, 1, record.TailDamaged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, got := scanAll(t, tc.b)
			assert.Equal(t, tc.entries, s.Entries)
			assert.Len(t, got, tc.entries)
			assert.Equal(t, tc.tail, s.Tail)
			assert.Equal(t, int64(DedupHeaderSize+tc.entries*DedupEntrySize), s.End)
		})
	}
}

func TestDedupHeaderErrors(t *testing.T) {
	v1 := make([]byte, DedupHeaderSize)
	copy(v1, "CMBD\x01")
	_, err := ScanDedup(append(v1, make([]byte, 16)...), nil)
	assert.ErrorIs(t, err, ErrDedupVersion, "a version 1 file (no checks) is never read")
	_, err = CheckDedupHeader([]byte("CMBD\x02"))
	assert.ErrorIs(t, err, ErrDedupHeader)
	_, err = CheckDedupHeader(make([]byte, DedupHeaderSize))
	assert.ErrorIs(t, err, ErrDedupHeader)
	b := dedupFile(0)
	b[10] = 1 // a reserved byte
	_, err = CheckDedupHeader(b)
	assert.ErrorIs(t, err, ErrDedupHeader)
}

// BenchmarkScanDedup: verifying a dedup file as the first FindTransaction of a
// partition loads it (1,000,000 entries, 20 MB).
func BenchmarkScanDedup(b *testing.B) {
	const n = 1_000_000
	file := dedupFile(n)
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s, err := ScanDedup(file, func(int, uint64, uint64) {})
		if err != nil || s.Entries != n {
			b.Fatal(s, err)
		}
	}
}

// Version 3: the header's base says the entries follow offset base (the offsets up to it
// are in the run files); an entry at or below it does not verify.
func TestDedupBase(t *testing.T) {
	b := make([]byte, DedupHeaderSize)
	chain := PutDedupHeader(b, 90)
	b = AppendDedupEntry(b, &chain, 7, 91)
	b = AppendDedupEntry(b, &chain, 8, 95)
	s, got := scanAll(t, b)
	assert.Equal(t, uint64(90), s.Base)
	assert.Equal(t, []dedupEntry{{7, 91}, {8, 95}}, got)

	b = b[:DedupHeaderSize]
	chain = DedupChainAt(b, DedupHeaderSize)
	b = AppendDedupEntry(b, &chain, 7, 90)
	s, got = scanAll(t, b)
	assert.Empty(t, got)
	assert.Equal(t, "offset 90 after 90", s.Reason)
}
