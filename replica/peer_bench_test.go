package replica

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// benchNodes starts a 3-member cluster, with peer TLS or without; raft's default timings.
func benchNodes(b *testing.B, withTLS bool) []*testNode {
	if withTLS {
		return startTLSNodes(b, 3)
	}
	return startNodes(b, 3)
}

// BenchmarkPeerDial is the cost of a new peer connection (TCP, then TLS 1.3 with client
// certificates and the hello, or the hello alone): what raft pays per pooled connection and a
// follower per forwarded long-poll.
func BenchmarkPeerDial(b *testing.B) {
	for _, mode := range []string{"plain", "tls"} {
		b.Run(mode, func(b *testing.B) {
			nodes := benchNodes(b, mode == "tls")
			b.ResetTimer()
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := nodes[0].log.ping(ctx, raft.ServerAddress(nodes[1].log.cfg.RaftAddr))
				cancel()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCommitOverPeerTLS: one entry appended and waited for at a time on a 3-node cluster
// in this process, peer connections plain or TLS (the pooled connections' record encryption).
func BenchmarkCommitOverPeerTLS(b *testing.B) {
	for _, mode := range []string{"plain", "tls"} {
		b.Run(mode, func(b *testing.B) {
			nodes := benchNodes(b, mode == "tls")
			var leader *testNode
			deadline := time.Now().Add(10 * time.Second)
			for leader == nil && time.Now().Before(deadline) {
				for _, n := range nodes {
					if n.log.Leading() {
						leader = n
					}
				}
				time.Sleep(time.Millisecond)
			}
			if leader == nil {
				b.Fatal("no leader")
			}
			payload := make([]byte, 1024)
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			for range b.N {
				tk, err := leader.log.Append(1, payload)
				if err == nil {
					err = tk.Wait()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
