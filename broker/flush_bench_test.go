package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// BenchmarkFlushPass: one flush pass on disk after a push of one 200 B
// message to each of 100 or 1,000 partitions, by fdatasync/fsync per file
// (the default) or one syncfs per kind of file (FlushSyncFS). new=true: the
// partitions were created since the last pass (segment file, DESCRIPTOR,
// directory and its parent to sync); new=false: the same partitions, pass
// after pass. One op = one pass; wall-ms/pass and cpu-ms/pass (user +
// system time of the process) time the pass alone (issue 21,
// docs/benchmarks.md "Flush pass: fdatasync per file or syncfs").
func BenchmarkFlushPass(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, syncFS := range []bool{false, true} {
			for _, fresh := range []bool{true, false} {
				mode := "per-file"
				if syncFS {
					mode = "syncfs"
				}
				b.Run(fmt.Sprintf("partitions=%d/%s/new=%v", n, mode, fresh), func(b *testing.B) {
					benchFlushPass(b, n, syncFS, fresh)
				})
			}
		}
	}
}

func benchFlushPass(b *testing.B, n int, syncFS, fresh bool) {
	br, err := Open(Config{DataDir: b.TempDir(), Sync: "always", Logger: zerolog.Nop(), FlushSyncFS: syncFS,
		MaintenanceInterval: -1, FlushInterval: time.Hour, CheckpointInterval: time.Hour})
	require.NoError(b, err)
	defer br.Close()
	payload := []byte(fmt.Sprintf(`{"pad":"%0190d"}`, 0))
	round := 0
	push := func() {
		items := make([]PushItem, n)
		for i := range items {
			items[i] = PushItem{Queue: "q", Partition: fmt.Sprintf("r%d-p%d", round, i), Payload: payload}
		}
		_, err := br.Push(items)
		require.NoError(b, err)
		if fresh {
			round++
		}
	}
	b.StopTimer()
	push()
	require.NoError(b, br.flushPass())
	var cpu, wall time.Duration
	for range b.N {
		push()
		c0, w0 := processCPU(), time.Now()
		b.StartTimer()
		require.NoError(b, br.flushPass())
		b.StopTimer()
		cpu += processCPU() - c0
		wall += time.Since(w0)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "cpu-ms/pass")
	b.ReportMetric(float64(wall.Microseconds())/float64(b.N)/1000, "wall-ms/pass")
}
