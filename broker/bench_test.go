package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

func benchBroker(b *testing.B, sync string) *Broker {
	br, err := Open(Config{DataDir: b.TempDir(), Sync: sync, Logger: zerolog.Nop()})
	require.NoError(b, err)
	b.Cleanup(func() { br.Close() })
	return br
}

func benchItems(queue string, parts, n int, seq *atomic.Int64) []PushItem {
	payload := []byte(fmt.Sprintf(`{"pad":"%0190d"}`, 0))
	items := make([]PushItem, n)
	p := fmt.Sprintf("p%d", seq.Add(1)%int64(parts))
	for i := range items {
		items[i] = PushItem{Queue: queue, Partition: p, Payload: payload}
	}
	return items
}

// BenchmarkPush measures Push of 100-message requests over 16 partitions
// (Sync "never": the engine's own cost, not the disk's).
func BenchmarkPush(b *testing.B) {
	br := benchBroker(b, "never")
	var seq atomic.Int64
	b.SetBytes(100 * 200)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := br.Push(benchItems("bench", 16, 100, &seq)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPushRetried measures Push of 100-message requests with client
// transactionIds over 16 partitions, every other request a retry of the one
// before (all duplicates of published messages: the dedup lookup finds
// each, nothing waits). Sync "never", as BenchmarkPush.
func BenchmarkPushRetried(b *testing.B) {
	br := benchBroker(b, "never")
	var seq, ids atomic.Int64
	b.SetBytes(100 * 200)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var items []PushItem
		for i := 0; pb.Next(); i++ {
			if i%2 == 0 {
				items = benchItems("bench", 16, 100, &seq)
				for k := range items {
					items[k].TransactionID = fmt.Sprintf("t%d", ids.Add(1))
				}
			}
			if _, err := br.Push(items); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPopAck measures a pop of 100 plus the ack of its last message.
func BenchmarkPopAck(b *testing.B) {
	for _, sync := range []string{"never", "always"} {
		b.Run("sync="+sync, func(b *testing.B) { benchPopAck(b, sync) })
	}
}

func benchPopAck(b *testing.B, sync string) { benchPopAckOn(b, benchBroker(b, sync)) }

func benchPopAckOn(b *testing.B, br *Broker) {
	var seq atomic.Int64
	for i := 0; i < b.N+64; i++ {
		if _, err := br.Push(benchItems("bench", 16, 100, &seq)); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(100 * 200)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := br.Pop(context.Background(), PopRequest{Queue: "bench", Batch: 100, Partitions: 1})
			if err != nil {
				b.Error(err)
				return
			}
			if len(res.Messages) == 0 {
				res.Release()
				continue
			}
			last := res.Messages[len(res.Messages)-1]
			if _, err := br.Ack(QueueModeGroup, []AckItem{{TransactionID: last.TransactionID, PartitionID: last.PartitionID, LeaseID: res.LeaseID}}); err != nil {
				b.Error(err)
			}
			res.Release()
		}
	})
	b.ReportMetric(float64(b.N*100)/time.Since(start).Seconds(), "msg/s")
}
