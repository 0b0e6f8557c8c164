package httpapi

import (
	"strings"

	"github.com/valyala/fasthttp"
)

// Linearizable reads on a cluster node (issue 22, docs/replication.md "Reads"): the leader's
// memory holds changes whose entries have not committed yet (an ack's cursor before its
// checkpoint), so after a read route's handler built its answer from that memory, the answer is
// sent only once the broker confirms that what it saw is committed and this node still leads
// (ReadBarrier); otherwise the client gets a 503 and retries. /health, /metrics,
// /metrics/prometheus and the dashboard's files are the node's own and answer at once.

// ReadBarrier is the broker's side (broker.Broker.ReadBarrier): nil once everything a read made
// before the call saw is committed and this node still leads. Found on the Backend of a server
// with Config.Cluster; a single node never asks.
type ReadBarrier interface {
	ReadBarrier() error
}

// readsCluster returns b's ReadBarrier when the server runs on a cluster node, else nil (one nil
// check per request on a single node).
func readsCluster(b Backend, cfg Config) ReadBarrier {
	if cfg.Cluster == nil {
		return nil
	}
	rb, _ := b.(ReadBarrier)
	return rb
}

// isRead reports whether rt only reads the broker's state: every GET but the pops (which claim,
// and answer once their claim's checkpoint is committed) and the node's own routes, and the
// streams' state lookup (a POST with a body).
func (rt *route) isRead() bool {
	switch {
	case rt.nodeLocal():
		return false
	case rt.method == "GET":
		return !strings.HasPrefix(rt.pattern, "/api/v1/pop")
	case rt.method == "POST":
		return rt.pattern == "/streams/v1/state/get"
	}
	return false
}

// confirmRead replaces the answer a read route's handler built with a 503 unless the broker
// confirms it (ReadBarrier).
func (s *Server) confirmRead(ctx *fasthttp.RequestCtx) {
	if err := s.reads.ReadBarrier(); err != nil {
		ctx.Response.Reset()
		unavailable(ctx, "Service unavailable: this node could not confirm that it leads its cluster and that what it read is committed; retry")
	}
}
