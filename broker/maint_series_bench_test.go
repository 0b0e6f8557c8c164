package broker

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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
