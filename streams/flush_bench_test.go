package streams

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/combmq/comb/vfs"
)

// BenchmarkWriteSnapshots measures one flush pass's snapshot step on the real
// file system: every shard of a query changed once since the last pass
// (`comb bench cycle` over 10,000 partitions dirties up to 10,000 a pass), 4
// small rows each. sync=false isolates the CPU and the non-sync syscalls.
func BenchmarkWriteSnapshots(b *testing.B) {
	for _, sync := range []bool{false, true} {
		for _, shards := range []int{100, 1000, 10000} {
			if sync && shards > 1000 {
				continue // minutes of fsyncs on a shared box
			}
			b.Run(fmt.Sprintf("sync=%v/shards=%d", sync, shards), func(b *testing.B) {
				s := NewStore()
				q := Query{ID: [16]byte{1}, Name: "q", Source: "src", ConfigHash: "h"}
				s.ApplyQuery(1, q, false)
				f := &Files{FS: vfs.OS, Root: b.TempDir(), NoSync: !sync}
				lsn := uint64(1)
				dirty := func() {
					for i := 0; i < shards; i++ {
						var p [16]byte
						binary.BigEndian.PutUint64(p[8:], uint64(i))
						lsn++
						c := Change{Query: q.ID, Partition: p, Ops: []Op{upsert("k0", `{"acc":1}`, 1), upsert("k1", `{"acc":1}`, 1),
							upsert("k2", `{"acc":1}`, 1), upsert("k3", `{"acc":1}`, 1)}}
						s.ApplyChange(lsn, &c)
					}
				}
				dirty()
				if err := s.WriteSnapshots(f); err != nil { // the files exist from here on, as in a steady run
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					dirty()
					b.StartTimer()
					if err := s.WriteSnapshots(f); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*shards), "µs/shard")
			})
		}
	}
}
