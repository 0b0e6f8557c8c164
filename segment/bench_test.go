package segment

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
)

// The workload: 100 messages of 200 B JSON a segment.
const (
	benchMsgs    = 100
	benchPayload = 200
)

func benchRecords() []Record { return recs(0, benchMsgs, benchPayload) }

func reportMsgs(b *testing.B, msgs int64) {
	b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msg/s")
}

// BenchmarkAppendNoSync: one goroutine appending segments to one log on disk, never syncing.
func BenchmarkAppendNoSync(b *testing.B) {
	for _, codec := range []Codec{CodecNone, CodecS2, CodecZstd} {
		b.Run(codec.String(), func(b *testing.B) {
			l, _, err := Open(b.TempDir(), Options{Codec: codec})
			require.NoError(b, err)
			rs := benchRecords()
			b.SetBytes(benchMsgs * benchPayload)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(int64(i), rs); err != nil {
					b.Fatal(err)
				}
			}
			reportMsgs(b, int64(b.N)*benchMsgs)
			b.StopTimer()
			require.NoError(b, l.Close())
		})
	}
}

// BenchmarkReadSequential: read a 200,000-message log front to back, 100 messages a call.
func BenchmarkReadSequential(b *testing.B) {
	for _, codec := range []Codec{CodecNone, CodecS2, CodecZstd} {
		b.Run(codec.String(), func(b *testing.B) {
			l, _, err := Open(b.TempDir(), Options{Codec: codec, MaxFileBytes: 8 << 20})
			require.NoError(b, err)
			rs := benchRecords()
			const segs = 2000
			for i := 0; i < segs; i++ {
				_, err := l.Append(int64(i), rs)
				require.NoError(b, err)
			}
			var rb ReadBuffer
			next := uint64(1)
			b.SetBytes(benchMsgs * benchPayload)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				msgs, err := l.Read(next, benchMsgs, 0, &rb)
				if err != nil || len(msgs) != benchMsgs {
					b.Fatal(err, len(msgs))
				}
				next += benchMsgs
				if next >= segs*benchMsgs {
					next = 1
				}
			}
			reportMsgs(b, int64(b.N)*benchMsgs)
			b.StopTimer()
			require.NoError(b, l.Close())
		})
	}
}

// BenchmarkTimeLookup: OffsetAtOrAfterTime over 20,000 segments in 10 files.
func BenchmarkTimeLookup(b *testing.B) {
	l, _, err := Open(b.TempDir(), Options{MaxFileBytes: 1 << 20})
	require.NoError(b, err)
	rs := recs(0, 2, 200)
	const segs = 20000
	for i := 0; i < segs; i++ {
		_, err := l.Append(int64(i*10), rs)
		require.NoError(b, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ts := int64((i * 7919) % (segs * 10))
		if off := l.OffsetAtOrAfterTime(ts); off == 0 {
			b.Fatal(off)
		}
	}
	b.StopTimer()
	require.NoError(b, l.Close())
}

// BenchmarkOpenRecovery opens a partition of 128 MiB (COMB_BENCH_1GIB=1: 1 GiB)
// of 64 MiB files after a clean close: only the newest file's tail is verified.
func BenchmarkOpenRecovery(b *testing.B) {
	size := int64(128 << 20)
	if os.Getenv("COMB_BENCH_1GIB") != "" {
		size = 1 << 30
	}
	dir := b.TempDir()
	l, _, err := Open(dir, Options{Codec: CodecNone})
	require.NoError(b, err)
	rs := benchRecords()
	for i := 0; int64(i)*benchMsgs*230 < size; i++ {
		_, err := l.Append(int64(i), rs)
		require.NoError(b, err)
	}
	require.NoError(b, l.Close())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, rep, err := Open(dir, Options{})
		if err != nil || rep.Repaired() {
			b.Fatal(err, rep)
		}
		b.StopTimer()
		_ = l.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(size>>20), "MiB")
}

// BenchmarkIdleLogFootprint: Go heap held by an open Log of a tiny partition
// (one 1-message segment), measured over 1,000 logs. Not counted: the
// active file's index mapping (one 4 KiB page of page cache) and 2 fds.
func BenchmarkIdleLogFootprint(b *testing.B) {
	const n = 1000
	dir := b.TempDir()
	for i := 0; i < n; i++ {
		l, _, err := Open(fmt.Sprintf("%s/%d", dir, i), Options{})
		require.NoError(b, err)
		_, err = l.Append(1, recs(i, 1, 200))
		require.NoError(b, err)
		require.NoError(b, l.Close())
	}
	b.ResetTimer()
	var perLog float64
	for it := 0; it < b.N; it++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ls := make([]*Log, n)
		for i := range ls {
			l, _, err := Open(fmt.Sprintf("%s/%d", dir, i), Options{})
			if err != nil {
				b.Fatal(err)
			}
			ls[i] = l
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perLog = float64(after.HeapAlloc-before.HeapAlloc) / n
		for _, l := range ls {
			_ = l.Close()
		}
	}
	b.ReportMetric(perLog, "heap-B/log")
}

// BenchmarkDedupLoad: the first FindTransaction of a partition with 200,000
// transaction ids, all in dedup.idx: read and verify the file, fill the table.
func BenchmarkDedupLoad(b *testing.B) {
	fs := vfs.NewMem()
	l, _, err := openLog(fs, "/p", Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 200_000; i += 1000 {
		if _, err := l.Append(int64(i), recs(i, 1000, 20)); err != nil {
			b.Fatal(err)
		}
	}
	if _, _, _, err := l.FindTransaction("load"); err != nil {
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(fs.Bytes("/p/" + dedupFileName))))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l, _, err := openLog(fs, "/p", Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, ok, err := l.FindTransaction("tx-199999"); err != nil || !ok {
			b.Fatal(ok, err)
		}
		b.StopTimer()
		_ = l.Close()
		b.StartTimer()
	}
}
