package segment

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFlushPass: one Committer.Flush over 100 or 1,000 dirty logs on
// disk (5 records of 200 B appended to each since the last pass), by
// fdatasync per file with w1..w64 in flight, or by one syncfs (SetSyncFS),
// or as the broker's pass under --sync always (yield: a hook that returns at
// once, so one fdatasync in flight up to 512 logs, yieldLogsPerWorker).
// new=true: every log was created since the last pass, so the pass also
// syncs its directory (a new partition); new=false: the same logs, pass
// after pass. One op = one pass; wall-ms/pass and cpu-ms/pass (user + system
// time of the process) time the Flush alone (issue 21, docs/benchmarks.md).
func BenchmarkFlushPass(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, mode := range []string{"syncfs", "yield", "w1", "w2", "w4", "w8", "w16", "w32", "w64"} {
			for _, fresh := range []bool{true, false} {
				b.Run(fmt.Sprintf("logs=%d/%s/new=%v", n, mode, fresh), func(b *testing.B) {
					benchFlushPass(b, n, mode, fresh)
				})
			}
		}
	}
}

func benchFlushPass(b *testing.B, n int, mode string, fresh bool) {
	dir := b.TempDir()
	c := NewCommitter()
	defer c.Close()
	c.SetSyncFS(mode == "syncfs")
	switch mode {
	case "syncfs":
	case "yield":
		c.SetYield(func() {})
	default:
		_, err := fmt.Sscanf(mode, "w%d", &c.workers)
		require.NoError(b, err)
	}
	rs := recs(0, 5, 200)
	var ls []*Log
	closeAll := func() {
		for _, l := range ls {
			require.NoError(b, l.Close())
		}
		ls = ls[:0]
	}
	defer closeAll()
	create := func(round int) {
		for i := 0; i < n; i++ {
			l, err := Create(fmt.Sprintf("%s/r%d-%d", dir, round, i), Options{})
			require.NoError(b, err)
			ls = append(ls, l)
		}
	}
	b.StopTimer()
	if !fresh {
		create(0)
	}
	var cpu, wall time.Duration
	for i := 0; i < b.N; i++ {
		if fresh {
			closeAll()
			create(i + 1)
		}
		for _, l := range ls {
			_, err := l.Append(int64(i), rs)
			require.NoError(b, err)
			c.Mark(l)
		}
		c0, w0 := cpuTime(), time.Now()
		b.StartTimer()
		require.NoError(b, c.Flush())
		b.StopTimer()
		cpu += cpuTime() - c0
		wall += time.Since(w0)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "cpu-ms/pass")
	b.ReportMetric(float64(wall.Microseconds())/float64(b.N)/1000, "wall-ms/pass")
}
