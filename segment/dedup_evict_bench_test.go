package segment

import (
	"fmt"
	"strconv"
	"testing"
)

// BenchmarkDedupPushManyLogs is issue 23's sustained-push cliff in one process: more logs than
// the HandleCache holds handles for, each with sealed dedup runs, pushed to round-robin as 16
// connections spread over 100 partitions do. One op is a push request's dedup work and
// append: FindTransactionsHashed of 100 new ids, then Append of their 100 records. While a
// log's eviction from the handle cache dropped its dedup filters (main at d4c9801..aaf92c7),
// every op after the cache filled reloaded and re-filtered every run file of its log; with
// the filters kept (their own byte budget) it costs what it costs on a loaded log.
// cpu-µs/op is the process's CPU time (merges included) per op.
func BenchmarkDedupPushManyLogs(b *testing.B) {
	const logs, idsPerLog, maxHandles = 32, 60_000, 16
	for _, evict := range []bool{false, true} {
		b.Run(fmt.Sprintf("evicting=%v", evict), func(b *testing.B) {
			max := 4 * logs * 8 // room for every log: no eviction
			if evict {
				max = maxHandles
			}
			cache := NewHandleCache(max)
			ls := make([]*Log, logs)
			rs := recs(0, 100, 200)
			for i := range ls {
				l, _, err := Open(b.TempDir(), Options{Codec: CodecS2, Handles: cache})
				if err != nil {
					b.Fatal(err)
				}
				if _, _, _, err := l.FindTransaction("load"); err != nil {
					b.Fatal(err)
				}
				for n := 0; n < idsPerLog; n += 100 {
					for k := range rs {
						rs[k].TransactionID = "tx-" + strconv.Itoa(n+k)
					}
					if _, err := l.Append(int64(n), rs); err != nil {
						b.Fatal(err)
					}
				}
				l.dedup.WaitMerges()
				ls[i] = l
			}
			b.Cleanup(func() {
				for _, l := range ls {
					_ = l.Close()
				}
			})
			txids := make([]string, 100)
			next := idsPerLog
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l := ls[i%logs]
				for k := range txids {
					txids[k] = "tx-" + strconv.Itoa(next+k)
					rs[k].TransactionID = txids[k]
				}
				next += 100
				found := 0
				if err := l.FindTransactions(txids, func(int, uint64, [16]byte) { found++ }); err != nil {
					b.Fatal(err)
				}
				if found != 0 {
					b.Fatalf("%d new ids found", found)
				}
				if _, err := l.Append(int64(next), rs); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for _, l := range ls {
				l.dedup.WaitMerges() // the merges the ops started are their cost too
			}
			// CPU, not wall time: the box is shared and the disk's waits are not the op's work.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
