package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// BenchmarkPushDuringFlushPass (issue 23): pushers callers each push one
// 200 B message at a time to a partition of their own while a flush pass
// syncs parts partitions that each took kb KiB since the last pass, on disk
// with --sync always: what a push's commit-log sync waits for while the
// pass's syncs share the device. mode none: main's pass (no hook: up to 16
// fdatasyncs in flight, one per 32 logs); serial: a hook that returns at once
// (one in flight up to 512 logs); yield: the broker's hook (flushYield: each
// of the pass's syncs waits for the commit log's batch in flight, at most
// 2 ms). One op = one pass; pass-ms is its wall time, push-p50-ms,
// push-p99-ms and push-max-ms the latencies of the pushes that ran during it
// (all passes and pushers pooled).
func BenchmarkPushDuringFlushPass(b *testing.B) {
	for _, parts := range []int{16, 200, 1000} {
		for _, pushers := range []int{1, 16} {
			kb := 64
			if parts == 1000 {
				kb = 4
			}
			for _, mode := range []string{"none", "serial", "yield"} {
				b.Run(fmt.Sprintf("partitions=%d/kb=%d/pushers=%d/%s", parts, kb, pushers, mode), func(b *testing.B) {
					benchPushDuringFlush(b, parts, kb, pushers, mode)
				})
			}
		}
	}
}

func benchPushDuringFlush(b *testing.B, parts, kb, pushers int, mode string) {
	br, err := Open(Config{DataDir: b.TempDir(), Sync: "always", Logger: zerolog.Nop(),
		MaintenanceInterval: -1, FlushInterval: time.Hour, CheckpointInterval: time.Hour})
	require.NoError(b, err)
	defer br.Close()
	switch mode {
	case "none":
		br.committer.SetYield(nil)
	case "serial":
		br.committer.SetYield(func() {})
	}
	payload := []byte(fmt.Sprintf(`{"pad":"%0190d"}`, 0))
	dirty := func() {
		const perPush = 100
		items := make([]PushItem, 0, perPush)
		for p := range parts {
			for range max(kb*1024/200/perPush, 1) {
				items = items[:0]
				for range perPush {
					items = append(items, PushItem{Queue: "q", Partition: fmt.Sprintf("p%d", p), Payload: payload})
				}
				_, err := br.Push(items)
				require.NoError(b, err)
			}
		}
	}
	b.StopTimer()
	dirty()
	require.NoError(b, br.flushPass())
	var lat []time.Duration
	var wall time.Duration
	for range b.N {
		dirty()
		stop := make(chan struct{})
		got := make(chan []time.Duration, pushers)
		for w := range pushers {
			go func() {
				hot := []PushItem{{Queue: "hot", Partition: fmt.Sprintf("h%d", w), Payload: payload}}
				var mine []time.Duration
				defer func() { got <- mine }()
				for {
					select {
					case <-stop:
						return
					default:
					}
					p0 := time.Now()
					if _, err := br.Push(hot); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(p0))
				}
			}()
		}
		w0 := time.Now()
		b.StartTimer()
		err := br.flushPass()
		b.StopTimer()
		wall += time.Since(w0)
		close(stop)
		for range pushers {
			lat = append(lat, <-got...)
		}
		require.NoError(b, err)
	}
	slices.Sort(lat)
	q := func(f float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(f*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(wall.Microseconds())/float64(b.N)/1000, "pass-ms")
	b.ReportMetric(q(0.5), "push-p50-ms")
	b.ReportMetric(q(0.99), "push-p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "push-max-ms")
	b.ReportMetric(float64(len(lat))/float64(b.N), "pushes/pass")
}
