package queenimport_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/queenimport"
	"github.com/combmq/comb/queenimport/pgtest"
)

// BenchmarkImport imports IMPORT_BENCH_MESSAGES (default 200,000) messages that Queen's own
// push procedure stored in 4 partitions (pushes of 1,000, ~60-byte JSON payloads), into a
// fresh data directory per iteration with the default sync policy; it reports messages/s.
// PostgreSQL runs on the same machine (pgtest). docs/benchmarks.md has the numbers.
func BenchmarkImport(b *testing.B) {
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("IMPORT_BENCH_MESSAGES")); err == nil && v > 0 {
		n = v
	}
	pg := pgtest.Start(b)
	const parts, batch = 4, 1000
	for i := 0; i < n; i += batch {
		items := make([]map[string]any, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			items = append(items, map[string]any{"queue": "bench", "partition": fmt.Sprintf("p%d", (i/batch)%parts),
				"transactionId": fmt.Sprintf("t%08d", j), "payload": map[string]any{"order": j, "sku": "ABC-123", "qty": 3}})
		}
		pg.Push(items)
	}
	b.ResetTimer()
	for range b.N {
		dir, err := os.MkdirTemp("", "comb-import-bench-")
		require.NoError(b, err)
		br, err := broker.Open(broker.Config{DataDir: dir})
		require.NoError(b, err)
		rep, err := queenimport.Import(context.Background(), pg.Conn, br, queenimport.Options{})
		require.NoError(b, err)
		require.NoError(b, br.Close())
		require.Equal(b, int64(n), rep.Messages)
		b.ReportMetric(float64(n)/rep.Elapsed.Seconds(), "msgs/s")
		os.RemoveAll(dir)
	}
}

// BenchmarkFollowPass measures a live move's pass: IMPORT_BENCH_MESSAGES (default 200,000)
// messages reach Queen after the snapshot (pushes of 1,000 into 4 partitions, outside the
// timer), then one Pass copies them; it reports messages/s. docs/benchmarks.md has the numbers.
func BenchmarkFollowPass(b *testing.B) {
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("IMPORT_BENCH_MESSAGES")); err == nil && v > 0 {
		n = v
	}
	pg := pgtest.Start(b)
	dir := b.TempDir()
	br, err := broker.Open(broker.Config{DataDir: dir})
	require.NoError(b, err)
	defer br.Close()
	f := queenimport.NewFollower(pg.Conn, br, nil, queenimport.FollowOptions{})
	require.NoError(b, f.Start(context.Background()))
	const parts, batch = 4, 1000
	b.ResetTimer()
	for it := range b.N {
		b.StopTimer()
		for i := 0; i < n; i += batch {
			items := make([]map[string]any, 0, batch)
			for j := i; j < min(i+batch, n); j++ {
				items = append(items, map[string]any{"queue": "bench", "partition": fmt.Sprintf("p%d", (i/batch)%parts),
					"transactionId": fmt.Sprintf("t%d-%08d", it, j), "payload": map[string]any{"order": j, "sku": "ABC-123", "qty": 3}})
			}
			pg.Push(items)
		}
		b.StartTimer()
		start := time.Now()
		added, err := f.Pass(context.Background())
		require.NoError(b, err)
		require.Equal(b, int64(n), added)
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
	}
}
