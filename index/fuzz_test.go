package index

import (
	"testing"

	"github.com/combmq/comb/record"
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

// FuzzDedupFile: any bytes as a dedup file scan without panicking; the accepted
// prefix has strictly increasing offsets, ends on the entry grid, and is exactly what
// writing its entries from the header's check would produce (so nothing unverified is
// ever accepted); what follows it is classified consistently.
func FuzzDedupFile(f *testing.F) {
	f.Add(dedupFile(2))
	f.Add(dedupFile(3)[:DedupHeaderSize+2*DedupEntrySize+5])
	f.Fuzz(func(t *testing.T, data []byte) {
		var last uint64
		var tb Table
		var ents [][2]uint64
		s, err := ScanDedup(data, func(i int, h, off uint64) {
			if off <= last || i != len(ents) {
				t.Fatalf("entry %d: offset %d after %d", i, off, last)
			}
			last = off
			tb.Insert(h, off)
			ents = append(ents, [2]uint64{h, off})
		})
		if err != nil {
			return
		}
		if s.End != int64(DedupHeaderSize+s.Entries*DedupEntrySize) || s.End > int64(len(data)) || tb.Len() != s.Entries {
			t.Fatalf("scan %+v of %d bytes", s, len(data))
		}
		hdr := make([]byte, DedupHeaderSize)
		copy(hdr, data[:DedupHeaderSize])
		chain, _ := CheckDedupHeader(hdr)
		re := hdr
		for _, e := range ents {
			re = AppendDedupEntry(re, &chain, e[0], e[1])
		}
		if string(re) != string(data[:s.End]) || chain != s.Chain || chain != DedupChainAt(data, s.End) {
			t.Fatalf("accepted prefix does not re-encode to itself")
		}
		switch {
		case s.End == int64(len(data)) && s.Tail != record.TailClean,
			s.Tail == record.TailCorrupt && (s.Resync <= s.End || s.Resync > int64(len(data))-DedupEntrySize),
			s.Tail != record.TailCorrupt && s.Resync != -1,
			s.Tail == record.TailTorn && int64(len(data))-s.End >= DedupEntrySize:
			t.Fatalf("inconsistent tail %+v of %d bytes", s, len(data))
		}
	})
}
