package report

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/combmq/comb/broker"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// BenchmarkMessageList measures GET /api/v1/messages' broker side over one
// partition of 1,000,000 messages (1,000 pushes of 1,000, 3 s apart, all in
// the default one-hour window; Sync "never"), with __QUEUE_MODE__ holding a
// lease over the oldest 100. Each case reads only what docs/api.md's bound
// allows: the newest limit+offset records, or the lease span, or the
// window's own offsets. Run with -benchtime=200x; the setup takes ~10 s.
func BenchmarkMessageList(b *testing.B) {
	start := time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)
	var nowMicros atomic.Int64
	nowMicros.Store(start.UnixMicro())
	clock := func() time.Time { return time.UnixMicro(nowMicros.Load()).UTC() }
	br, err := broker.Open(broker.Config{DataDir: b.TempDir(), Sync: "never", Logger: zerolog.Nop(), Now: clock})
	require.NoError(b, err)
	b.Cleanup(func() { br.Close() })
	rs := New(br.View())
	payload := []byte(fmt.Sprintf(`{"pad":"%0190d"}`, 0))
	items := make([]broker.PushItem, 1000)
	for push := range 1000 {
		for i := range items {
			items[i] = broker.PushItem{Queue: "big", Partition: "p", TransactionID: fmt.Sprintf("m%d", push*1000+i), Payload: payload}
		}
		_, err := br.Push(items)
		require.NoError(b, err)
		nowMicros.Add(3_000_000)
	}
	res, err := br.Pop(context.Background(), broker.PopRequest{Queue: "big", Batch: 100, Partitions: 1, LeaseSeconds: 3600})
	require.NoError(b, err)
	require.Len(b, res.Messages, 100)
	pid := res.PartitionID
	res.Release()
	mid := start.Add(1500 * time.Second)
	cases := []struct {
		name string
		f    MessageFilter
		want int
	}{
		{"newest-200", MessageFilter{Queue: "big"}, 200},
		{"offset-800-limit-200", MessageFilter{Queue: "big", Offset: 800}, 200},
		{"status-pending-200", MessageFilter{Queue: "big", Status: StatusPending}, 200},
		{"status-processing-100", MessageFilter{Queue: "big", Status: StatusProcessing}, 100},
		{"status-completed-none", MessageFilter{Queue: "big", Status: StatusCompleted}, 0},
		{"window-1s-mid", MessageFilter{Queue: "big", FromMicros: mid.UnixMicro(), ToMicros: mid.Add(time.Second).UnixMicro()}, 200},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				l, err := rs.Messages(c.f)
				if err != nil || len(l.Messages) != c.want {
					b.Fatalf("%d messages, %v", len(l.Messages), err)
				}
			}
		})
	}
	b.Run("detail", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, err := rs.Message(pid, fmt.Sprintf("m%d", (i*7919)%1_000_000)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
