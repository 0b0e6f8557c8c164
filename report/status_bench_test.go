package report

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/combmq/comb/analytics"
	"github.com/combmq/comb/broker"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// BenchmarkStatusReads is the broker side of the dashboard's status routes
// with n partitions spread over 100 queues (one message each, consumed):
// GET /api/v1/status walks every queue and partition (ResourceQueues,
// StatusSummary) and sums the series; the series alone do not depend on n.
// 100,000 partitions only with COMB_BENCH_SCALE=1.
func BenchmarkStatusReads(b *testing.B) {
	for _, n := range scaleSizes() {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			br, err := broker.Open(broker.Config{DataDir: b.TempDir(), Sync: "never", Logger: zerolog.Nop()})
			require.NoError(b, err)
			b.Cleanup(func() { br.Close() })
			rs := New(br.View())
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
				{"ResourceQueues", func() { rs.ResourceQueues(ResourceFilter{}) }},
				{"StatusSummary", func() { rs.StatusSummary() }},
				{"Series-24h-minutes-all", func() { rs.Series(day) }},
				{"Series-24h-minutes-one-queue", func() { rs.Series(one) }},
				{"StatusQueue", func() { rs.StatusQueue("q07", PartitionPage{}) }},
				{"RecentMessages-50", func() { rs.RecentMessages("q07", 50, 0) }},
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

// scaleSizes are the partition counts of the benchmarks; 100,000 only with
// COMB_BENCH_SCALE=1.
func scaleSizes() []int {
	if os.Getenv("COMB_BENCH_SCALE") == "1" {
		return []int{10, 10_000, 100_000}
	}
	return []int{10, 10_000}
}

// fillPartitions creates n partitions of queue q with one message each, all
// consumed by the queue-mode group.
func fillPartitions(b *testing.B, br *broker.Broker, q string, n int) {
	b.Helper()
	for r := 0; r < n; r += 1000 {
		items := make([]broker.PushItem, 0, 1000)
		for i := r; i < min(n, r+1000); i++ {
			items = append(items, broker.PushItem{Queue: q, Partition: "p" + strconv.Itoa(i), Payload: []byte("1")})
		}
		_, err := br.Push(items)
		require.NoError(b, err)
	}
	for got := 0; got < n; {
		res, err := br.Pop(context.Background(), broker.PopRequest{Queue: q, Batch: 1000, Partitions: 1000, AutoAck: true})
		require.NoError(b, err)
		require.NotEmpty(b, res.Messages)
		got += len(res.Messages)
		res.Release()
	}
}
