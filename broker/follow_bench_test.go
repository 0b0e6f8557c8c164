package broker

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// BenchmarkClusterPush measures a one-message push answered after its entry
// is committed: on a 3-node cluster on loopback (raft-wal fsyncs every
// append on each node; segment files unsynced as in single-node mode) and,
// to compare, on one node with the local commit log (--sync always).
// Sequential pushes report their latency (p50-µs, p99-µs); parallel ones
// (-cpu sets the pushers with RunParallel) measure throughput.
func BenchmarkClusterPush(b *testing.B) {
	setups := []struct {
		name string
		open func(b *testing.B) *Broker
	}{
		{"single-node-sync-always", func(b *testing.B) *Broker {
			br, err := Open(Config{DataDir: b.TempDir(), Sync: "always", Logger: zerolog.Nop(), MaintenanceInterval: -1})
			require.NoError(b, err)
			b.Cleanup(func() { br.Close() })
			return br
		}},
		{"3-node-raft", func(b *testing.B) *Broker {
			return waitLeader(b, startCluster(b, 3)).b
		}},
	}
	for _, s := range setups {
		b.Run(s.name+"/sequential", func(b *testing.B) {
			br := s.open(b)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				_, err := br.Push([]PushItem{{Queue: "bench", TransactionID: fmt.Sprintf("s%d", i), Payload: []byte(`{"n":1}`)}})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
		b.Run(s.name+"/parallel", func(b *testing.B) {
			br := s.open(b)
			var n atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					if _, err := br.Push([]PushItem{{Queue: "bench", Partition: fmt.Sprintf("p%d", i%16), TransactionID: fmt.Sprintf("p%d", i), Payload: []byte(`{"n":1}`)}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkClusterFailover measures, with raft's default timeouts (what
// comb serve would run with), the time from the leader's shutdown to the
// first push answered by the next leader and to its first pop (which waits
// out the fencing wait): reported as push-ms and pop-ms, averaged over b.N
// failovers of fresh clusters.
func BenchmarkClusterFailover(b *testing.B) {
	var pushTotal, popTotal time.Duration
	for range b.N {
		nodes := startClusterWith(b, 3, raftDefaults)
		leader := waitLeader(b, nodes)
		_, err := leader.b.Push([]PushItem{{Queue: "f", TransactionID: "before", Payload: []byte(`1`)}})
		require.NoError(b, err)
		start := time.Now()
		leader.close()
		var next *clusterNode
		for {
			for _, n := range nodes {
				if n.b != nil && n.log.Leading() {
					next = n
				}
			}
			if next != nil {
				if _, err := next.b.Push([]PushItem{{Queue: "f", TransactionID: "after", Payload: []byte(`2`)}}); err == nil {
					break
				}
			}
			time.Sleep(time.Millisecond) // polling for the election; the measurement's resolution
		}
		pushTotal += time.Since(start)
		_, err = next.b.Pop(context.Background(), PopRequest{Queue: "f", Group: "g"})
		require.NoError(b, err)
		popTotal += time.Since(start)
		for _, n := range nodes {
			n.close()
		}
	}
	b.ReportMetric(float64(pushTotal.Milliseconds())/float64(b.N), "push-ms")
	b.ReportMetric(float64(popTotal.Milliseconds())/float64(b.N), "pop-ms")
}
