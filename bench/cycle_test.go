package bench

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCycleAndTransactionBodiesAreTheSDKsShape(t *testing.T) {
	b := &PoppedBatch{n: 3, lastTx: []byte("t-3"), lastPartitionID: []byte("pid-7"), lastPartition: []byte("p7"), lastLease: []byte("L")}
	s := &CommitSpec{QueryID: "Q", Sink: "sink", StateOps: 2, Payload: []byte(`{"x":1}`)}
	var cycle map[string]any
	require.NoError(t, json.Unmarshal(AppendCycleBody(nil, b, s, "w1", 9), &cycle))
	require.Equal(t, map[string]any{
		"query_id": "Q", "partition_id": "pid-7",
		"state_ops": []any{
			map[string]any{"type": "upsert", "key": "k0", "value": map[string]any{"acc": 9.0, "windowStart": 0.0, "windowEnd": 60000.0}},
			map[string]any{"type": "upsert", "key": "k1", "value": map[string]any{"acc": 9.0, "windowStart": 0.0, "windowEnd": 60000.0}},
		},
		"push_items":    []any{map[string]any{"queue": "sink", "partition": "p7", "transactionId": "w1-c9", "payload": map[string]any{"x": 1.0}}},
		"ack":           map[string]any{"transactionId": "t-3", "leaseId": "L", "status": "completed", "count": 3.0},
		"release_lease": true,
	}, cycle)

	s.Group = "g"
	var tx map[string]any
	require.NoError(t, json.Unmarshal(AppendTransactionBody(nil, b, s, "w1", 9), &tx))
	require.Equal(t, map[string]any{"operations": []any{
		map[string]any{"type": "push", "items": []any{map[string]any{"queue": "sink", "partition": "p7", "transactionId": "w1-c9", "payload": map[string]any{"x": 1.0}}}},
		map[string]any{"type": "ack", "transactionId": "t-3", "partitionId": "pid-7", "leaseId": "L", "status": "completed", "consumerGroup": "g"},
	}}, tx)
}

func TestRunCycleAndTransactionDrainTheBacklog(t *testing.T) {
	for _, wl := range []Workload{WorkloadCycle, WorkloadTransaction} {
		f := newFakeQueen()
		d := newFakeDriver(t, f)
		cfg := DefaultConfig()
		cfg.Workload = wl
		cfg.Partitions = 4
		cfg.Concurrency = 2
		cfg.Batch = 10
		cfg.Prefill = 200
		cfg.Warmup = 0
		cfg.Duration = time.Minute // the drained backlog ends the run
		cfg, err := cfg.Normalize()
		require.NoError(t, err)
		res, err := Run(context.Background(), cfg, d, nil)
		require.NoError(t, err, "%s", wl)
		require.True(t, res.Drained, "%s", wl)
		require.Equal(t, int64(200), res.Messages, "%s", wl)
		require.Equal(t, int64(0), res.ErrorsTotal, "%s: %v", wl, res.Errors)
		require.Equal(t, int64(20), res.LatencyMs.Count, "%s: 200 messages in commits of 10", wl)
		require.Greater(t, res.CommitsPerSec, 0.0)
		f.mu.Lock()
		require.Equal(t, 20, f.commits[string(wl)], "%s", wl)
		f.mu.Unlock()
	}
	cfg := DefaultConfig()
	cfg.Workload, cfg.Driver = WorkloadCycle, DriverRedis
	_, err := cfg.Normalize()
	require.ErrorIs(t, err, ErrConfig, "cycles are an HTTP API route")
}
