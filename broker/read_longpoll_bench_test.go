package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// BenchmarkLongPollWake: one parked long-poll consumer per queue (pop with
// wait, ack, pop again), one producer pushing a message at a time to the queues
// in turn at an even rate; b.N messages. It reports, per message, the wake
// latency from the push's answer to the pop's (wake-p50-µs, wake-p99-µs: the
// waker's tick, the claim and its checkpoint) and from the push's start
// (e2e-p50-µs, e2e-p99-µs: plus the push's own commit), the process CPU
// (cpu-ns/msg) and the commit-log fdatasyncs (syncs/msg) per message, its
// push, pop and ack together. No HTTP: the broker's part of
// `comb bench longpoll`. tick=1us all but turns the waker's coalescing off,
// to show what the 5 ms tick adds.
func BenchmarkLongPollWake(b *testing.B) {
	for _, sync := range []string{"never", "always"} {
		for _, queues := range []int{16, 200} {
			for _, tick := range []time.Duration{DefaultWakeTick, time.Microsecond} {
				b.Run(fmt.Sprintf("sync=%s/queues=%d/tick=%s", sync, queues, tick), func(b *testing.B) {
					benchLongPollWake(b, sync, queues, tick, time.Millisecond) // 1,000 msg/s
				})
			}
		}
	}
}

func benchLongPollWake(b *testing.B, syncMode string, queues int, tick, every time.Duration) {
	br, err := Open(Config{DataDir: b.TempDir(), Sync: syncMode, Logger: zerolog.Nop(), WakeTick: tick})
	require.NoError(b, err)
	defer br.Close()
	names := make([]string, queues)
	for i := range names {
		names[i] = "lp" + strconv.Itoa(i)
		_, err := br.Push([]PushItem{{Queue: names[i], Partition: "p", TransactionID: "warm-" + names[i], Payload: []byte(`{}`)}})
		require.NoError(b, err)
	}
	type sent struct{ start, answered time.Time }
	var mu sync.Mutex
	sentAt := make(map[string]sent, b.N)
	wake := make([]time.Duration, 0, b.N)
	e2e := make([]time.Duration, 0, b.N)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	got := make(chan struct{}, b.N+queues)
	for _, q := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				res, err := br.Pop(ctx, PopRequest{Queue: q, Batch: 100, Wait: true, Timeout: 2 * time.Second})
				now := time.Now()
				if err != nil || len(res.Messages) == 0 {
					res.Release()
					continue
				}
				items := make([]AckItem, len(res.Messages))
				mu.Lock()
				for i, m := range res.Messages {
					items[i] = AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: res.LeaseID}
					if s, ok := sentAt[m.TransactionID]; ok {
						// A pop that claims a message pushed while the
						// consumer was not parked measures no wake; one
						// that answers before the push (it claimed while
						// the push synced, write_early.go) measures 0.
						w := time.Duration(0)
						if !s.answered.IsZero() {
							w = max(now.Sub(s.answered), 0)
						}
						wake = append(wake, w)
						e2e = append(e2e, now.Sub(s.start))
					}
				}
				mu.Unlock()
				res.Release()
				if _, err := br.Ack("", items); err != nil {
					b.Error(err)
				}
				for range items {
					got <- struct{}{}
				}
			}
		}()
	}
	for range queues { // the warm-up messages
		<-got
	}
	b.ResetTimer()
	cpu0, syncs0, groups0 := processCPU(), br.syncHist.snapshot().Count, br.wal.(localLog).l.GroupStats()
	next := time.Now()
	for i := 0; i < b.N; i++ {
		time.Sleep(time.Until(next))
		next = next.Add(every)
		tx := "m" + strconv.Itoa(i)
		start := time.Now()
		mu.Lock()
		sentAt[tx] = sent{start: start}
		mu.Unlock()
		_, err := br.Push([]PushItem{{Queue: names[i%queues], Partition: "p", TransactionID: tx, Payload: []byte(`{}`)}})
		require.NoError(b, err)
		mu.Lock()
		s := sentAt[tx]
		s.answered = time.Now()
		sentAt[tx] = s
		mu.Unlock()
	}
	for i := 0; i < b.N; i++ {
		<-got
	}
	b.StopTimer()
	cpu, syncs, groups := processCPU()-cpu0, br.syncHist.snapshot().Count-syncs0, br.wal.(localLog).l.GroupStats()
	cancel()
	wg.Wait()
	slices.Sort(wake)
	slices.Sort(e2e)
	pct := func(d []time.Duration, p float64) float64 {
		if len(d) == 0 {
			return 0
		}
		return float64(d[min(int(float64(len(d))*p), len(d)-1)].Microseconds())
	}
	b.ReportMetric(pct(wake, 0.5), "wake-p50-µs")
	b.ReportMetric(pct(wake, 0.99), "wake-p99-µs")
	b.ReportMetric(pct(e2e, 0.5), "e2e-p50-µs")
	b.ReportMetric(pct(e2e, 0.99), "e2e-p99-µs")
	// Per message: its push, pop and ack together.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/msg")
	b.ReportMetric(float64(syncs)/float64(b.N), "syncs/msg")
	// How many of the commit log's batches the group-commit wait held, and
	// how many of those it let go at its cap.
	b.ReportMetric(float64(groups.Waited-groups0.Waited)/float64(b.N), "held/msg")
	b.ReportMetric(float64(groups.Capped-groups0.Capped)/float64(b.N), "capped/msg")
}
