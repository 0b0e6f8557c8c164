package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// Issue 14: AppendTo hands back the segment exactly as the file holds it, after what
// dst already held, and compresses nothing twice.
func TestAppendToReturnsTheSegmentAsWritten(t *testing.T) {
	for _, codec := range []Codec{CodecNone, CodecS2, CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			fs := vfs.NewMem()
			l, _ := openMem(t, fs, Options{Codec: codec, MinCompressBytes: -1})
			dst := []byte("prefix")
			first, out, err := l.AppendTo(dst, 100, recs(0, 5, 80))
			require.NoError(t, err)
			assert.Equal(t, uint64(1), first)
			file := fs.Bytes("/p/" + segName(1))
			assert.Equal(t, "prefix", string(out[:6]), "dst's bytes stay in front")
			assert.Equal(t, file, out[6:], "the copy is the file's bytes")
			if codec != CodecNone {
				assert.Equal(t, codec, Codec(out[6+5]&codecMask), "the segment is stored compressed")
			}

			first, out2, err := l.AppendTo(out[:0], 50, recs(5, 2, 10)) // a timestamp from the past
			require.NoError(t, err)
			assert.Equal(t, uint64(6), first)
			assert.Equal(t, fs.Bytes("/p/" + segName(1))[len(file):], out2)
			h, err := parseHeader(out2)
			require.NoError(t, err)
			assert.Equal(t, int64(100), h.tsMicros, "the copy carries the clamped timestamp the file has")
			require.NoError(t, l.Close())
		})
	}
}

// A write that fails leaves dst as it was and the log unchanged; the retry succeeds.
func TestAppendToFailedWriteReturnsDstUnchanged(t *testing.T) {
	mem := vfs.NewMem()
	fs := errorfs.New(mem)
	l, _, err := openLog(fs, "/p", Options{})
	require.NoError(t, err)
	_, err = l.Append(1, recs(0, 2, 10))
	require.NoError(t, err)
	remove := fs.Inject(errorfs.Fault{Op: errorfs.OpWrite, Under: ".seg", Short: true})
	first, out, err := l.AppendTo([]byte("x"), 2, recs(2, 2, 10))
	require.Error(t, err)
	assert.Equal(t, uint64(0), first)
	assert.Equal(t, "x", string(out))
	assert.Equal(t, uint64(3), l.NextOffset())
	remove()
	first, out, err = l.AppendTo([]byte("x"), 2, recs(2, 2, 10))
	require.NoError(t, err)
	assert.Equal(t, uint64(3), first)
	file := mem.Bytes("/p/" + segName(1))
	assert.Equal(t, file[len(file)-(len(out)-1):], out[1:], "the retried segment, after the first")
	require.NoError(t, l.Close())
}

// replayPair appends batches to a source log with AppendTo and replays what it returned
// into a fresh log with AppendSegment.
type replayPair struct {
	src, dst       *vfs.Mem
	srcLog, dstLog *Log
	segs           [][]byte
	recs           []Record
}

func newReplayPair(t *testing.T, srcOpts, dstOpts Options) *replayPair {
	p := &replayPair{src: vfs.NewMem(), dst: vfs.NewMem()}
	p.srcLog, _ = openMem(t, p.src, srcOpts)
	p.dstLog, _ = openMem(t, p.dst, dstOpts)
	return p
}

func (p *replayPair) push(t *testing.T, ts int64, rs []Record) {
	t.Helper()
	_, seg, err := p.srcLog.AppendTo(nil, ts, rs)
	require.NoError(t, err)
	p.segs = append(p.segs, seg)
	p.recs = append(p.recs, rs...)
}

// Issue 14: AppendTo's bytes replayed into a fresh log give identical files (rotation
// included, whatever the replaying log's codec) and identical reads, timestamps and
// dedup answers.
func TestAppendSegmentRoundTrip(t *testing.T) {
	p := newReplayPair(t, Options{Codec: CodecS2, MinCompressBytes: -1, MaxFileBytes: 1000},
		Options{Codec: CodecZstd, MaxFileBytes: 1000})
	for i := 0; i < 30; i++ {
		p.push(t, int64(1000+10*(i/3)), recs(10*i, 1+i%4, 40+7*i))
	}
	for _, seg := range p.segs {
		h, err := parseHeader(seg)
		require.NoError(t, err)
		first, err := p.dstLog.AppendSegment(seg)
		require.NoError(t, err)
		assert.Equal(t, h.base, first)
	}
	src, dst := p.srcLog, p.dstLog
	assert.Equal(t, src.NextOffset(), dst.NextOffset())
	assert.Equal(t, src.LastTimestamp(), dst.LastTimestamp())
	assert.Equal(t, src.FirstOffset(), dst.FirstOffset())
	segFiles := func(m *vfs.Mem) map[string][]byte {
		names, err := m.List("/p")
		require.NoError(t, err)
		out := map[string][]byte{}
		for _, n := range names {
			if _, ok := parseSegName(n); ok {
				out[n] = m.Bytes("/p/" + n)
			}
		}
		return out
	}
	srcFiles := segFiles(p.src)
	assert.Greater(t, len(srcFiles), 3, "the scenario rotates")
	assert.Equal(t, srcFiles, segFiles(p.dst), "identical segment files")
	got := readAll(t, dst, 1)
	require.Len(t, got, len(p.recs))
	want := readAll(t, src, 1)
	for i := range got {
		assert.Equal(t, uint64(i+1), got[i].Offset)
		assert.Equal(t, want[i].TimestampMicros, got[i].TimestampMicros)
		requireRecord(t, p.recs[i], got[i])
	}
	off, _, ok, err := dst.FindTransaction(p.recs[17].TransactionID)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, uint64(18), off)
	require.NoError(t, src.Close())
	require.NoError(t, dst.Close())
	assert.Equal(t, srcFiles, segFiles(p.dst), "Close changes no segment file")
}

// The dedup index, once loaded, learns the transaction ids of replayed segments (issue
// 14: a replay followed by pushes must still refuse duplicates).
func TestAppendSegmentKeepsALoadedDedupIndexCurrent(t *testing.T) {
	p := newReplayPair(t, Options{Codec: CodecS2, MinCompressBytes: -1}, Options{})
	for i := 0; i < 6; i++ {
		p.push(t, int64(i), recs(3*i, 3, 30))
	}
	_, err := p.dstLog.AppendSegment(p.segs[0])
	require.NoError(t, err)
	_, _, ok, err := p.dstLog.FindTransaction(p.recs[1].TransactionID) // loads the table
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, p.dstLog.dedup.Loaded())
	for _, seg := range p.segs[1:] {
		_, err := p.dstLog.AppendSegment(seg)
		require.NoError(t, err)
	}
	for i, r := range p.recs {
		off, id, ok, err := p.dstLog.FindTransaction(r.TransactionID)
		require.NoError(t, err)
		require.True(t, ok, r.TransactionID)
		assert.Equal(t, uint64(i+1), off)
		assert.Equal(t, r.ID, id)
	}
	require.NoError(t, p.dstLog.dedup.Flush())
	require.NoError(t, p.dstLog.Close())
	again, _ := openMem(t, p.dst, Options{})
	off, _, ok, err := again.FindTransaction(p.recs[16].TransactionID)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, uint64(17), off, "the entries written to dedup.idx are right")
	require.NoError(t, again.Close())
}

// reseal recomputes a segment's checksum after a test edited its bytes, so only the
// rule under test fails.
func reseal(seg []byte) []byte {
	binary.LittleEndian.PutUint64(seg[40:], checksum(seg, seg[HeaderSize:]))
	return seg
}

// Issue 14: a replayed segment is verified in full before anything is written; one that
// does not continue the log is ErrSegmentMismatch, one that does not verify ErrCorrupt.
func TestAppendSegmentRefuses(t *testing.T) {
	src, _ := openMem(t, vfs.NewMem(), Options{})
	_, first, err := src.AppendTo(nil, 100, recs(0, 3, 20))
	require.NoError(t, err)
	_, second, err := src.AppendTo(nil, 200, recs(3, 2, 20))
	require.NoError(t, err)
	_, third, err := src.AppendTo(nil, 300, recs(5, 2, 20))
	require.NoError(t, err)
	edit := func(seg []byte, fn func(b []byte) []byte) []byte {
		return fn(append([]byte(nil), seg...))
	}
	cases := []struct {
		name     string
		seg      []byte
		mismatch bool
		words    string
	}{
		{"a segment already in the log (base below NextOffset)", first, true, "offsets 1-3, the log's next offset is 4"},
		{"a segment after a gap (base above NextOffset)", third, true, "offsets 6-7, the log's next offset is 4"},
		{"a flipped byte", edit(second, func(b []byte) []byte { b[60] ^= 1; return b }), false, "checksum mismatch"},
		{"one byte short", second[:len(second)-1], false, "bytes, the header says a segment of"},
		{"a byte too many", append(append([]byte(nil), second...), 0), false, "header says a segment of"},
		{"only a header", second[:HeaderSize], false, "48 bytes, the header says a segment of"},
		{"empty", nil, false, "partial header"},
		{"garbage", []byte("not a segment, not even close to one, at all......"), false, "bad magic"},
		{"a timestamp before the log's last", edit(second, func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[24:], 99)
			return reseal(b)
		}), false, "stamped 99 µs, before the log's last segment (100 µs)"},
		{"more records than the header says", edit(second, func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[16:], 1)
			return reseal(b)
		}), false, "more records than the 1 the header says"},
		{"fewer records than the header says", edit(second, func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[16:], 3)
			return reseal(b)
		}), false, "2 records, header says 3"},
		{"a record length past the block", edit(second, func(b []byte) []byte {
			b[HeaderSize] = 0x7f
			return reseal(b)
		}), false, "bad record length"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			l, _ := openMem(t, fs, Options{})
			_, err := l.AppendSegment(first)
			require.NoError(t, err)
			before := fs.Bytes("/p/" + segName(1))
			_, err = l.AppendSegment(tc.seg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.words)
			assert.Equal(t, tc.mismatch, errors.Is(err, ErrSegmentMismatch))
			assert.Equal(t, !tc.mismatch, errors.Is(err, ErrCorrupt))
			var ce *CorruptionError
			assert.False(t, errors.As(err, &ce), "the bytes are not this log's file")
			assert.Equal(t, before, fs.Bytes("/p/"+segName(1)), "nothing written")
			assert.Equal(t, uint64(4), l.NextOffset())
			_, err = l.AppendSegment(second) // the log is still usable
			require.NoError(t, err)
			require.NoError(t, l.Close())
			_, err = l.AppendSegment(third)
			assert.ErrorIs(t, err, ErrClosed)
		})
	}
}

// The codec never matters to a replay: each segment says how it is stored.
func TestAppendSegmentAcceptsEveryCodec(t *testing.T) {
	dst, _ := openMem(t, vfs.NewMem(), Options{})
	var want []Record
	var segs [][]byte
	for i, codec := range []Codec{CodecZstd, CodecNone, CodecS2} {
		src, _ := openMem(t, vfs.NewMem(), Options{Codec: codec, MinCompressBytes: -1})
		for _, seg := range segs { // a log with another codec holds the segments so far
			_, err := src.AppendSegment(seg)
			require.NoError(t, err)
		}
		rs := recs(10*i, 4, 100)
		_, seg, err := src.AppendTo(nil, int64(i), rs)
		require.NoError(t, err)
		assert.Equal(t, codec, Codec(seg[5]&codecMask), fmt.Sprintf("stored with %s", codec))
		_, err = dst.AppendSegment(seg)
		require.NoError(t, err)
		want, segs = append(want, rs...), append(segs, seg)
	}
	got := readAll(t, dst, 1)
	require.Len(t, got, len(want))
	for i := range got {
		requireRecord(t, want[i], got[i])
	}
}
