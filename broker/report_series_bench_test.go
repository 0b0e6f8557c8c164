package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/combmq/comb/analytics"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// BenchmarkSeriesCost is BenchmarkPush and a pop+ack loop with the
// per-minute series on and off (Config.NoAnalytics; issue 13: within 5 %).
// Sync "never", so the engine's cost is not hidden behind the disk's.
func BenchmarkSeriesCost(b *testing.B) {
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "analytics=on", false: "analytics=off"}[on]
		b.Run("push/"+name, func(b *testing.B) {
			br := seriesBenchBroker(b, on)
			var seq atomic.Int64
			b.SetBytes(100 * 200)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			defer func() { b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op") }()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := br.Push(benchItems("bench", 16, 100, &seq)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		b.Run("popack/"+name, func(b *testing.B) {
			br := seriesBenchBroker(b, on)
			var seq atomic.Int64
			for i := 0; i < b.N+16; i++ {
				_, err := br.Push(benchItems("bench", 16, 100, &seq))
				require.NoError(b, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			defer func() { b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op") }()
			for range b.N {
				res, err := br.Pop(context.Background(), PopRequest{Queue: "bench", Batch: 100})
				require.NoError(b, err)
				last := res.Messages[len(res.Messages)-1]
				_, err = br.Ack(QueueModeGroup, []AckItem{{TransactionID: last.TransactionID, PartitionID: last.PartitionID, LeaseID: res.LeaseID}})
				require.NoError(b, err)
				res.Release()
			}
		})
	}
}

// processCPU is the process's user + system CPU time: per op it stays
// meaningful when other work shares the machine and wall-clock ns/op does not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func seriesBenchBroker(b *testing.B, on bool) *Broker {
	br, err := Open(Config{DataDir: b.TempDir(), Sync: "never", Logger: zerolog.Nop(), NoAnalytics: !on})
	require.NoError(b, err)
	b.Cleanup(func() { br.Close() })
	return br
}

// BenchmarkStatusReads is the broker side of the dashboard's status routes
// with n partitions spread over 100 queues (one message each, consumed):
// GET /api/v1/status walks every queue and partition (ResourceQueues,
// StatusSummary) and sums the series; the series alone do not depend on n.
// 100,000 partitions only with COMB_BENCH_SCALE=1.
func BenchmarkStatusReads(b *testing.B) {
	for _, n := range scaleSizes() {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			br := seriesBenchBroker(b, true)
			for q := range 100 {
				fillPartitions(b, br, fmt.Sprintf("q%02d", q), max(n/100, 1))
			}
			now := time.Now()
			day := SeriesQuery{Interval: analytics.Minute, From: now.Add(-24 * time.Hour), To: now}
			one := day
			one.Queue = "q07"
			for _, c := range []struct {
				name string
				fn   func()
			}{
				{"ResourceQueues", func() { br.ResourceQueues(ResourceFilter{}) }},
				{"StatusSummary", func() { br.StatusSummary() }},
				{"Series-24h-minutes-all", func() { br.Series(day) }},
				{"Series-24h-minutes-one-queue", func() { br.Series(one) }},
				{"StatusQueue", func() { br.StatusQueue("q07", PartitionPage{}) }},
				{"RecentMessages-50", func() { br.RecentMessages("q07", 50, 0) }},
			} {
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						c.fn()
					}
				})
			}
		})
	}
}
