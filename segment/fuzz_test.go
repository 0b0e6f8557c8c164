package segment

import (
	"bytes"
	"errors"
	"testing"

	"github.com/combmq/comb/vfs"
)

// FuzzSegmentDecoder: any bytes as a segment file must open, verify and read
// without panicking; damage is reported as ErrCorrupt, never skipped, and
// what Open keeps must read back without error.
func FuzzSegmentDecoder(f *testing.F) {
	for _, codec := range []Codec{CodecNone, CodecS2, CodecZstd} {
		fs := vfs.NewMem()
		l, _, _ := openLog(fs, "/p", Options{Codec: codec, MinCompressBytes: -1})
		_, _ = l.Append(100, recs(0, 3, 40))
		_, _ = l.Append(200, recs(3, 2, 10))
		_ = l.Close()
		f.Add(fs.Bytes("/p/" + segName(1)))
	}
	f.Add([]byte("CMBS\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		_ = fs.MkdirAll("/p")
		fs.SetBytes("/p/"+segName(1), data)
		_, err := verifyFS(fs, "/p", func(ce *CorruptionError) {
			if !errors.Is(ce, ErrCorrupt) || ce.StartByte > ce.EndByte || ce.EndByte > int64(len(data)) {
				t.Fatalf("bad report %+v", ce)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		l, rep, err := openLog(fs, "/p", Options{})
		if err != nil {
			return // the newest file is torn, never fatal: only I/O errors land here
		}
		if rep.TruncatedBytes < 0 || rep.TruncatedBytes > int64(len(data)) {
			t.Fatalf("truncated %d of %d bytes", rep.TruncatedBytes, len(data))
		}
		var rb ReadBuffer
		for from := uint64(1); from < l.NextOffset(); {
			msgs, err := l.Read(from, 3, 0, &rb)
			if err != nil {
				t.Fatalf("read of a recovered log at %d: %v", from, err)
			}
			if len(msgs) == 0 || msgs[0].Offset != from {
				t.Fatalf("read at %d returned %d messages", from, len(msgs))
			}
			from = msgs[len(msgs)-1].Offset + 1
		}
		_ = l.Close()
	})
}

// FuzzQuarantineMarker: any bytes as a QUARANTINE marker parse without panicking, and
// what parses is written back (as editQuarantineFS writes it) to a marker that parses
// to the same ranges and notes.
func FuzzQuarantineMarker(f *testing.F) {
	f.Add([]byte("comb-quarantine v1\n61 120 moved to quarantine/partitions/x/00000000000000000061.seg\n# why\n\n7 9\n"))
	f.Add([]byte("comb-quarantine v1\n17 32 split-pending 00000000000000000017.seg moved to q\n"))
	f.Add([]byte("comb-quarantine v1\n5 4\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, err := parseMarkerLines(data)
		if err != nil {
			return
		}
		fs := vfs.NewMem()
		_ = fs.MkdirAll("/p")
		if err := editQuarantineFS(fs, "/p", func([]markerLine) []markerLine { return lines }); err != nil {
			t.Fatal(err)
		}
		ranges := 0
		for _, l := range lines {
			if l.r != nil {
				ranges++
			}
		}
		b, _ := fs.ReadFile("/p/" + QuarantineFileName)
		if ranges == 0 {
			if b != nil {
				t.Fatalf("a marker without ranges is removed, got %q", b)
			}
			return
		}
		again, err := parseMarkerLines(b)
		if err != nil {
			t.Fatalf("rewritten marker %q: %v", b, err)
		}
		if len(again) != len(lines) {
			t.Fatalf("%d lines, %d after a rewrite", len(lines), len(again))
		}
		for i := range lines {
			if (lines[i].r == nil) != (again[i].r == nil) || lines[i].r != nil && (*lines[i].r != *again[i].r || lines[i].note != again[i].note) {
				t.Fatalf("line %d: %+v became %+v", i, lines[i], again[i])
			}
		}
	})
}

// FuzzPlanSplit: any bytes as a damaged sealed file plan without panicking; the runs
// are whole, ordered, inside the file's offsets, and the damaged ranges are exactly the
// other bytes; applying the plan leaves a log Open accepts that serves every run.
func FuzzPlanSplit(f *testing.F) {
	fs := vfs.NewMem()
	l, _, _ := openLog(fs, "/p", Options{})
	for i := 0; i < 4; i++ {
		_, _ = l.Append(int64(100*i), recs(3*i, 3, 30))
	}
	_ = l.Close()
	good := fs.Bytes("/p/" + segName(1))
	f.Add(good)
	flipped := append([]byte(nil), good...)
	flipped[len(good)/2] ^= 1
	f.Add(flipped)
	f.Add(append(append([]byte(nil), good[:100]...), good...))
	f.Fuzz(func(t *testing.T, data []byte) {
		const end = 1000 // the next file's first offset
		fs := vfs.NewMem()
		fs.SetBytes("/p/"+segName(1), data)
		fs.SetBytes("/p/"+segName(end), nil)
		p, err := planSplitFS(fs, "/p", segName(1))
		if err != nil {
			t.Fatal(err) // a sealed file always plans: damage becomes damaged ranges
		}
		covered := int64(0)
		next := uint64(1)
		for _, r := range p.Runs {
			if r.StartByte < covered || r.EndByte <= r.StartByte || r.FirstOffset < next || r.NextOffset <= r.FirstOffset || r.NextOffset > end {
				t.Fatalf("run %+v after byte %d offset %d", r, covered, next)
			}
			covered, next = r.EndByte, r.NextOffset
		}
		bytes := int64(0)
		for _, r := range p.Runs {
			bytes += r.EndByte - r.StartByte
		}
		for _, d := range p.Damaged {
			bytes += d.EndByte - d.StartByte
		}
		if bytes != int64(len(data)) {
			t.Fatalf("runs and damaged ranges cover %d of %d bytes", bytes, len(data))
		}
		if err := applySplitFS(fs, p, "/q/"+segName(1), ""); err != nil {
			t.Fatal(err)
		}
		l, _, err := openLog(fs, "/p", Options{})
		if err != nil {
			t.Fatalf("open after the split: %v", err)
		}
		defer l.Close()
		got := 0
		var rb ReadBuffer
		for from := uint64(1); from < end; {
			msgs, err := l.Read(from, 100, 0, &rb)
			if err != nil {
				t.Fatalf("read after the split: %v", err)
			}
			if len(msgs) == 0 {
				break
			}
			got += len(msgs)
			from = msgs[len(msgs)-1].Offset + 1
		}
		want := 0
		for _, r := range p.Runs {
			want += int(r.NextOffset - r.FirstOffset)
		}
		if got != want {
			t.Fatalf("served %d records, the runs hold %d", got, want)
		}
	})
}

// FuzzAppendSegment: any bytes replayed into a log either go in whole (one segment
// that continues the log, read back record for record) or are refused with
// ErrSegmentMismatch or ErrCorrupt, leaving the file as it was; never a panic.
func FuzzAppendSegment(f *testing.F) {
	for _, codec := range []Codec{CodecNone, CodecS2, CodecZstd} {
		s, _, _ := openLog(vfs.NewMem(), "/p", Options{Codec: codec, MinCompressBytes: -1})
		_, _ = s.Append(100, recs(0, 3, 40))
		_, seg, _ := s.AppendTo(nil, 200, recs(3, 4, 30))
		f.Add(seg)
	}
	f.Add([]byte("CMBS\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, seg []byte) {
		fs := vfs.NewMem()
		l, _, err := openLog(fs, "/p", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(100, recs(0, 3, 40)); err != nil {
			t.Fatal(err)
		}
		before := fs.Bytes("/p/" + segName(1))
		first, err := l.AppendSegment(seg)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrSegmentMismatch) {
				t.Fatalf("refusal %v is neither ErrCorrupt nor ErrSegmentMismatch", err)
			}
			if !bytes.Equal(before, fs.Bytes("/p/"+segName(1))) || l.NextOffset() != 4 {
				t.Fatal("a refused segment changed the log")
			}
			return
		}
		h, _ := parseHeader(seg)
		if first != 4 || l.NextOffset() != 4+uint64(h.count) {
			t.Fatalf("appended at %d, next %d, for %d records", first, l.NextOffset(), h.count)
		}
		if got := fs.Bytes("/p/" + segName(1)); !bytes.Equal(got[len(before):], seg) {
			t.Fatal("the file does not hold the segment byte for byte")
		}
		var rb ReadBuffer
		msgs, err := l.Read(4, int(h.count)+1, 0, &rb)
		if err != nil || len(msgs) != int(h.count) {
			t.Fatalf("read back %d of %d records: %v", len(msgs), h.count, err)
		}
	})
}

// FuzzOpenFrom: whatever follows the synced offsets (the tail of the file holding
// keepBelow-1, and a newer file), OpenFrom keeps exactly the offsets below keepBelow.
func FuzzOpenFrom(f *testing.F) {
	m := vfs.NewMem()
	l, _, _ := openLog(m, "/p", Options{})
	_, _ = l.Append(100, recs(0, 3, 40))
	_, _ = l.Append(200, recs(3, 3, 40))
	prefix := m.Bytes("/p/" + segName(1))
	_, next, _ := l.AppendTo(nil, 300, recs(6, 3, 40))
	f.Add(next, next)
	f.Add(append(make([]byte, 100), next...), []byte("garbage"))
	f.Add(next[:60], []byte{})
	f.Fuzz(func(t *testing.T, tail, newer []byte) {
		fs := vfs.NewMem()
		fs.SetBytes("/p/"+segName(1), append(append([]byte(nil), prefix...), tail...))
		fs.SetBytes("/p/"+segName(7), newer)
		l, rep, err := openLogFrom(fs, "/p", Options{}, 7)
		if err != nil {
			t.Fatalf("OpenFrom: %v", err)
		}
		if l.NextOffset() != 7 || len(fs.Bytes("/p/"+segName(1))) != len(prefix) {
			t.Fatalf("next %d, file %d bytes: want 7, %d", l.NextOffset(), len(fs.Bytes("/p/"+segName(1))), len(prefix))
		}
		if rep.Unsynced.Bytes != int64(len(tail)) {
			t.Fatalf("reported %d bytes cut, want %d", rep.Unsynced.Bytes, len(tail))
		}
		var rb ReadBuffer
		if msgs, err := l.Read(1, 10, 0, &rb); err != nil || len(msgs) != 6 {
			t.Fatalf("read %d of 6: %v", len(msgs), err)
		}
		_ = l.Close()
	})
}
