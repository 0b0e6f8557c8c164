package segment

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkAppendTo: BenchmarkAppendNoSync through AppendTo, whose only extra work is
// one copy of the segment into the caller's buffer (issue 14's push path). Compare
// the two in one run: go test -run '^$' -bench 'AppendNoSync|AppendTo$' ./segment/
func BenchmarkAppendTo(b *testing.B) {
	for _, codec := range []Codec{CodecNone, CodecS2} {
		b.Run(codec.String(), func(b *testing.B) {
			l, _, err := Open(b.TempDir(), Options{Codec: codec})
			require.NoError(b, err)
			rs := benchRecords()
			var buf []byte
			b.SetBytes(benchMsgs * benchPayload)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, buf, err = l.AppendTo(buf[:0], int64(i), rs); err != nil {
					b.Fatal(err)
				}
			}
			reportMsgs(b, int64(b.N)*benchMsgs)
			b.StopTimer()
			require.NoError(b, l.Close())
		})
	}
}

// BenchmarkAppendSegment: replaying segments of the workload into a log on
// disk (verify: header, checksum, decompression and record framing; then the write).
// Recovery replays a commit log's tail at this rate.
func BenchmarkAppendSegment(b *testing.B) {
	for _, codec := range []Codec{CodecNone, CodecS2} {
		b.Run(codec.String(), func(b *testing.B) {
			src, _, err := Open(b.TempDir(), Options{Codec: codec, MaxFileBytes: 1 << 30})
			require.NoError(b, err)
			dst, _, err := Open(b.TempDir(), Options{})
			require.NoError(b, err)
			rs := benchRecords()
			const chunk = 500
			segs := make([][]byte, 0, chunk)
			b.SetBytes(benchMsgs * benchPayload)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if len(segs) == 0 {
					b.StopTimer()
					for k := 0; k < chunk; k++ {
						_, seg, err := src.AppendTo(nil, int64(i+k), rs)
						require.NoError(b, err)
						segs = append(segs, seg)
					}
					b.StartTimer()
				}
				if _, err := dst.AppendSegment(segs[0]); err != nil {
					b.Fatal(err)
				}
				segs = segs[1:]
			}
			reportMsgs(b, int64(b.N)*benchMsgs)
			b.StopTimer()
			require.NoError(b, src.Close())
			require.NoError(b, dst.Close())
		})
	}
}

// BenchmarkOpenFromReplay: recovering one partition of the issue-14 broker after a
// kill -9: OpenFrom at the last flushed offset (a 16 MiB file synced, its index on
// disk) cuts a 1 MiB unsynced tail, and AppendSegment replays the tail's 50 segments.
// One op is one recovery.
func BenchmarkOpenFromReplay(b *testing.B) {
	dir := b.TempDir()
	l, _, err := Open(dir, Options{MaxFileBytes: 1 << 30})
	require.NoError(b, err)
	rs := benchRecords()
	var tail [][]byte
	for i := 0; l.active == nil || l.active.info.size < 17<<20; i++ {
		_, seg, err := l.AppendTo(nil, int64(i), rs)
		require.NoError(b, err)
		if l.active.info.size > 16<<20 {
			tail = append(tail, seg)
		}
	}
	h, _ := parseHeader(tail[0])
	keep := h.base
	require.NoError(b, l.Close())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, _, err := OpenFrom(dir, Options{MaxFileBytes: 1 << 30}, keep)
		if err != nil {
			b.Fatal(err)
		}
		for _, seg := range tail {
			if _, err := l.AppendSegment(seg); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		require.NoError(b, l.Close())
		b.StartTimer()
	}
	b.ReportMetric(float64(len(tail)), "segments/op")
}
