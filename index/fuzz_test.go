package index

import (
	"testing"
)

// FuzzIndexReader: any bytes as an index file must load without panicking,
// and the searches over what loads must agree with a linear scan.
func FuzzIndexReader(f *testing.F) {
	back := &memBacking{}
	fl, _, _ := Load(back, 11)
	for _, e := range sample() {
		_ = fl.Append(e)
	}
	f.Add(append([]byte(nil), back.b[:HeaderSize+4*EntrySize]...), uint64(17), int64(200))
	f.Add([]byte("CMBI"), uint64(1), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, off uint64, ts int64) {
		back := &memBacking{b: append([]byte(nil), data...)}
		fl, _, err := Load(back, 11)
		if err != nil {
			return
		}
		es := fl.Entries()
		n := es.Len()
		wantOff, wantTs := -1, n
		for i := n - 1; i >= 0; i-- {
			e := es.At(i)
			if wantOff < 0 && off >= e.Base && off <= e.Last() {
				wantOff = i
			}
			if e.TimestampMicros >= ts {
				wantTs = i
			}
		}
		if got := es.FindOffset(off); got != wantOff {
			t.Fatalf("FindOffset(%d) = %d, linear scan %d", off, got, wantOff)
		}
		if got := es.FirstAtOrAfterTime(ts); got != wantTs {
			t.Fatalf("FirstAtOrAfterTime(%d) = %d, linear scan %d", ts, got, wantTs)
		}
		if err := fl.Append(Entry{Base: 1, Pos: 0, TimestampMicros: 0, Count: 1}); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzDedupFile: any bytes as a dedup file scan without panicking, and the
// accepted prefix has strictly increasing offsets.
func FuzzDedupFile(f *testing.F) {
	b := make([]byte, DedupHeaderSize)
	PutDedupHeader(b)
	b = AppendDedupEntry(b, HashTxn("a"), 1)
	b = AppendDedupEntry(b, HashTxn("b"), 2)
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		if CheckDedupHeader(data) != nil {
			return
		}
		var last uint64
		var tb Table
		n := ScanDedup(data[DedupHeaderSize:], func(h, off uint64) bool {
			if off <= last {
				t.Fatalf("offset %d after %d", off, last)
			}
			last = off
			tb.Insert(h, off)
			return true
		})
		if n%DedupEntrySize != 0 || n > len(data)-DedupHeaderSize || tb.Len() != n/DedupEntrySize {
			t.Fatalf("consumed %d of %d", n, len(data))
		}
	})
}
