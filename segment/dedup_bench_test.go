package segment

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// benchDedupLog appends n records (segments of 100, 200-byte JSON payloads, s2, transaction
// ids tx-0 .. tx-(n-1)) to a log on the real disk and loads its dedup index, as a partition
// that has served pushes: the shape of issue 14's push hot path.
func benchDedupLog(b *testing.B, n int) *Log {
	b.Helper()
	l, _, err := Open(b.TempDir(), Options{Codec: CodecS2})
	if err != nil {
		b.Fatal(err)
	}
	rs := recs(0, 100, 200) // payloads reused: the generator, not the log, would dominate
	for i := 0; i < n; i += 100 {
		for k := range rs {
			rs[k].TransactionID = "tx-" + strconv.Itoa(i+k)
		}
		if _, err := l.Append(int64(i), rs); err != nil {
			b.Fatal(err)
		}
	}
	if _, _, _, err := l.FindTransaction("load"); err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkDedupFind: one FindTransactions of 100 transaction ids (a push request's batch)
// in a partition holding n ids, for the three kinds of ids a push brings (issue 14):
//   - new: ids never stored (the common case: the filter answers, nothing is read);
//   - retried: the ids of the newest push, sent again (a client retry);
//   - old: 100 ids stored long ago, each in another segment (a replay of old data): every
//     one is verified by reading its record, so this case is bound by segment reads.
//
// ns/id is ns/op divided by 100.
func BenchmarkDedupFind(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		l := benchDedupLog(b, n)
		for _, kind := range []string{"new", "retried", "old"} {
			b.Run(fmt.Sprintf("%s/ids=%d", kind, n), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, uint64(n)))
				txids := make([]string, 100)
				next := 0
				want := 0
				fill := func() {
					for k := range txids {
						switch kind {
						case "new":
							txids[k] = "new-" + strconv.Itoa(next)
							next++
						case "retried":
							txids[k] = "tx-" + strconv.Itoa(n-100+k)
						case "old":
							txids[k] = "tx-" + strconv.Itoa(rng.IntN(n-10_000))
						}
					}
				}
				if kind != "new" {
					want = 100
				}
				b.ReportAllocs()
				for b.Loop() {
					if kind != "retried" {
						b.StopTimer()
						fill()
						b.StartTimer()
					} else if txids[0] == "" {
						fill()
					}
					found := 0
					if err := l.FindTransactions(txids, func(int, uint64, [16]byte) { found++ }); err != nil || found != want {
						b.Fatal(err, found)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/id")
			})
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDedupHeapPerMessage: Go heap held per stored message after pushing
// COMB_BENCH_DEDUP_MSGS (default 4,000,000) messages into COMB_BENCH_DEDUP_LOGS (default 4) logs
// the way the broker does: each
// push of 100 is looked up in the dedup index first, then appended. The heap is measured after
// a GC with the logs open and loaded, minus the heap before the logs were opened; it counts
// everything a Log holds per message (the dedup index, the in-memory segment index of the
// active file, the file list). rss-B/msg is the growth of the process's resident set over the
// same span, after returning freed heap to the OS (issue 14's target is on RSS). Run it with
// -benchtime 1x: it is one measurement.
func BenchmarkDedupHeapPerMessage(b *testing.B) {
	total := 4_000_000
	if s := os.Getenv("COMB_BENCH_DEDUP_MSGS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		total = v
	}
	logs := 4
	if s := os.Getenv("COMB_BENCH_DEDUP_LOGS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatal("COMB_BENCH_DEDUP_LOGS:", s)
		}
		logs = v
	}
	txids := make([]string, 100)
	rs := recs(0, 100, 200) // payloads reused: the generator, not the log, would dominate
	for range b.N {
		dir := b.TempDir()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		debug.FreeOSMemory()
		rss0 := rssBytes(b)
		ls := make([]*Log, logs)
		for i := range ls {
			l, _, err := Open(fmt.Sprintf("%s/%d", dir, i), Options{Codec: CodecS2})
			if err != nil {
				b.Fatal(err)
			}
			ls[i] = l
		}
		for i := 0; i < total; i += 100 {
			l := ls[(i/100)%logs]
			for k := range rs {
				rs[k].TransactionID = "tx-" + strconv.Itoa(i+k)
				rs[k].ID[0], rs[k].ID[1], rs[k].ID[2] = byte(i+k), byte((i+k)>>8), byte((i+k)>>16)
				txids[k] = rs[k].TransactionID
			}
			if err := l.FindTransactions(txids, func(int, uint64, [16]byte) { b.Fatal("a new id was found") }); err != nil {
				b.Fatal(err)
			}
			if _, err := l.Append(int64(i), rs); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		debug.FreeOSMemory() // what the scavenger returns in time: garbage of merges is not held
		b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(total), "heap-B/msg")
		b.ReportMetric(float64(after.HeapInuse)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(rssBytes(b)-rss0)/float64(total), "rss-B/msg")
		for _, l := range ls {
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// rssBytes is the process's resident set (/proc/self/statm), heap and mapped index files alike.
func rssBytes(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}
