package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// scaleSizes are the idle-partition counts of the scale benchmarks; 100,000
// only with COMB_BENCH_SCALE=1 (creating them takes about a minute).
func scaleSizes() []int {
	if os.Getenv("COMB_BENCH_SCALE") == "1" {
		return []int{10, 10_000, 100_000}
	}
	return []int{10, 10_000}
}

// fillPartitions creates n partitions of queue q with one message each, all
// consumed by the queue-mode group, so they are idle and empty for pops.
func fillPartitions(b *testing.B, br *Broker, q string, n int) {
	b.Helper()
	for r := 0; r < n; r += 1000 {
		items := make([]PushItem, 0, 1000)
		for i := r; i < min(n, r+1000); i++ {
			items = append(items, PushItem{Queue: q, Partition: "p" + strconv.Itoa(i), Payload: []byte("1")})
		}
		_, err := br.Push(items)
		require.NoError(b, err)
	}
	for got := 0; got < n; {
		res, err := br.Pop(context.Background(), PopRequest{Queue: q, Batch: 1000, Partitions: 1000, AutoAck: true})
		require.NoError(b, err)
		require.NotEmpty(b, res.Messages)
		got += len(res.Messages)
		res.Release()
	}
}

// BenchmarkWildcardPopSparse is issue 7's candidate selection: n partitions
// of which 10 receive messages; each op pushes one message to one of the 10
// and pops it with a wildcard autoAck pop. The cost must not grow with n.
func BenchmarkWildcardPopSparse(b *testing.B) {
	for _, n := range scaleSizes() {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			br := benchBroker(b, "never")
			fillPartitions(b, br, "q", n)
			ctx := context.Background()
			item := []PushItem{{Queue: "q", Payload: []byte("1")}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				item[0].Partition = "p" + strconv.Itoa(i%10)
				if _, err := br.Push(item); err != nil {
					b.Fatal(err)
				}
				res, err := br.Pop(ctx, PopRequest{Queue: "q", Batch: 10, AutoAck: true})
				if err != nil || len(res.Messages) != 1 {
					b.Fatalf("pop: %v, %d messages", err, len(res.Messages))
				}
				res.Release()
			}
		})
	}
}

// BenchmarkFirstPopAfterRestart is the first wildcard pop of a group after a
// clean restart with n idle partitions and 10 holding one message each.
func BenchmarkFirstPopAfterRestart(b *testing.B) {
	for _, n := range scaleSizes() {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			cfg := Config{DataDir: dir, Sync: "never", Logger: zerolog.Nop(), MaintenanceInterval: -1}
			br, err := Open(cfg)
			require.NoError(b, err)
			fillPartitions(b, br, "q", n)
			require.NoError(b, br.Close())
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				br, err := Open(cfg)
				require.NoError(b, err)
				items := make([]PushItem, 10)
				for j := range items {
					items[j] = PushItem{Queue: "q", Partition: "p" + strconv.Itoa(j), Payload: []byte("1")}
				}
				_, err = br.Push(items)
				require.NoError(b, err)
				b.StartTimer()
				res, err := br.Pop(context.Background(), PopRequest{Queue: "q", Batch: 10, Partitions: 10, AutoAck: true})
				b.StopTimer()
				if err != nil || len(res.Messages) != 10 {
					b.Fatalf("iteration %d pop: %v, %d messages", i, err, len(res.Messages))
				}
				res.Release()
				require.NoError(b, br.Close())
				b.StartTimer()
			}
		})
	}
}

// BenchmarkRestart measures Open of a directory of 10,000 partitions after a
// clean Close and after a crash (the clean-shutdown marker removed, every
// tail verified). COMB_BENCH_RESTART_KIB sets the data per partition (KiB,
// default 16): restart time must not depend on it. Runs only with
// COMB_BENCH_RESTART=1 (it writes that much data first).
func BenchmarkRestart(b *testing.B) {
	if os.Getenv("COMB_BENCH_RESTART") != "1" {
		b.Skip("set COMB_BENCH_RESTART=1")
	}
	kib := 16
	if v, err := strconv.Atoi(os.Getenv("COMB_BENCH_RESTART_KIB")); err == nil && v > 0 {
		kib = v
	}
	parts := 10_000
	if v, err := strconv.Atoi(os.Getenv("COMB_BENCH_RESTART_PARTS")); err == nil && v > 0 {
		parts = v
	}
	dir := os.Getenv("COMB_BENCH_RESTART_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	cfg := Config{DataDir: dir, Sync: "never", Logger: zerolog.Nop(), MaintenanceInterval: -1}
	br, err := Open(cfg)
	require.NoError(b, err)
	if br.View().Counters().Partitions < parts {
		payload := []byte(fmt.Sprintf(`{"pad":"%01000d"}`, 0)) // ~1 KiB
		start := time.Now()
		for r := 0; r < parts; r += 100 {
			for range kib {
				items := make([]PushItem, 0, 100)
				for i := r; i < r+100; i++ {
					items = append(items, PushItem{Queue: "q", Partition: "p" + strconv.Itoa(i), Payload: payload})
				}
				_, err := br.Push(items)
				require.NoError(b, err)
			}
		}
		b.Logf("created and filled %d partitions in %v", parts, time.Since(start))
	}
	require.NoError(b, br.Close())
	var bytes int64
	_ = filepath.Walk(filepath.Join(dir, "partitions"), func(_ string, fi os.FileInfo, _ error) error {
		if fi != nil && !fi.IsDir() {
			bytes += fi.Size()
		}
		return nil
	})
	b.Logf("%d partitions, %.1f MiB of segment and index files", parts, float64(bytes)/(1<<20))
	// clean: the marker; crash: no marker, the summary checkpoint (what a
	// crash after a quiet spell finds); crash-unchecked: neither, every log
	// opened and its tail verified (a crash right after writing everything).
	for _, mode := range []string{"clean", "crash", "crash-unchecked"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				if mode != "clean" {
					require.NoError(b, os.Remove(filepath.Join(dir, "meta", cleanFileName)))
				}
				if mode == "crash-unchecked" {
					err := os.Remove(filepath.Join(dir, "meta", summariesFileName))
					require.True(b, err == nil || os.IsNotExist(err), "%v", err)
				}
				start := time.Now()
				br, err := Open(cfg)
				require.NoError(b, err)
				b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/open")
				b.StopTimer()
				require.Equal(b, parts+1, br.View().Counters().Partitions+1)
				require.NoError(b, br.Close())
				b.StartTimer()
			}
		})
	}
}

// BenchmarkPartitionFootprint reports the heap held per partition (queue
// registry, log, cursor) when loaded and idle (files open, dedup table
// loaded by a duplicate check) and after idle eviction released it.
func BenchmarkPartitionFootprint(b *testing.B) {
	const n = 5_000 // × 3 descriptors with no cap: stays under a 20,000 ulimit
	for range b.N {
		b.StopTimer()
		heap := func() float64 {
			var ms runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&ms)
			return float64(ms.HeapAlloc)
		}
		base := heap()
		br, err := Open(Config{DataDir: b.TempDir(), Sync: "never", Logger: zerolog.Nop(), MaintenanceInterval: -1, MaxOpenFiles: -1})
		require.NoError(b, err)
		for r := 0; r < n; r += 1000 {
			items := make([]PushItem, 0, 2000)
			for i := r; i < r+1000; i++ {
				tx := "t" + strconv.Itoa(i)
				items = append(items, PushItem{Queue: "q", Partition: "p" + strconv.Itoa(i), TransactionID: tx, Payload: []byte("1")})
			}
			_, err := br.Push(items)
			require.NoError(b, err)
		}
		fillPartitionsConsume(b, br, "q", n)
		loaded := heap()
		for _, p := range br.partitionList(nil) {
			p.log.Release()
		}
		evicted := heap()
		b.ReportMetric((loaded-base)/n, "B/loaded-partition")
		b.ReportMetric((evicted-base)/n, "B/evicted-partition")
		require.NoError(b, br.Close())
	}
}

func fillPartitionsConsume(b *testing.B, br *Broker, q string, n int) {
	for got := 0; got < n; {
		res, err := br.Pop(context.Background(), PopRequest{Queue: q, Batch: 1000, Partitions: 1000, AutoAck: true})
		require.NoError(b, err)
		require.NotEmpty(b, res.Messages)
		got += len(res.Messages)
		res.Release()
	}
}

// BenchmarkPushNewPartitions pushes requests of 100 messages to 100 partitions
// that do not exist yet (the 100,000-partition scale run's push phase) with
// the default handle cap and sync policy interval.
func BenchmarkPushNewPartitions(b *testing.B) {
	maxOpen := 0 // the default cap
	if v, err := strconv.Atoi(os.Getenv("COMB_BENCH_MAX_OPEN_FILES")); err == nil {
		maxOpen = v
	}
	for _, small := range []bool{false, true} {
		b.Run(fmt.Sprintf("small=%v", small), func(b *testing.B) { benchPushNewPartitions(b, maxOpen, small) })
	}
}

// benchPushNewPartitions is BenchmarkPushNewPartitions with small partitions
// (Config.SmallPartitions: no inode per new partition) on or off.
func benchPushNewPartitions(b *testing.B, maxOpen int, small bool) {
	br, err := Open(Config{DataDir: b.TempDir(), Sync: "interval", Logger: zerolog.Nop(), MaintenanceInterval: -1, MaxOpenFiles: maxOpen, SmallPartitions: small})
	require.NoError(b, err)
	defer br.Close()
	payload := []byte(`{"n":1}`)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for range b.N {
		items := make([]PushItem, 100)
		for i := range items {
			items[i] = PushItem{Queue: "q", Partition: "p" + strconv.Itoa(n), Payload: payload}
			n++
		}
		_, err := br.Push(items)
		require.NoError(b, err)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "partitions/s")
}
