package httpapi

import (
	"errors"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/replica"
)

// Membership routes of a replicated cluster (comb's own, issue 15; docs/operations.md "Grow,
// shrink, repair"): GET /api/v1/cluster (read-only level) and POST /api/v1/cluster/members,
// DELETE /api/v1/cluster/members/:id (admin). They are forwarded to the leader like every other
// request (forward.go), so the leader answers with its view and makes the change; on a single
// node they are 404.

// Membership is what the membership routes need of a replicated node (*replica.Log). The
// server finds it on Config.Cluster, so a test's Cluster without it serves them as 404.
type Membership interface {
	Members() ([]replica.Member, error)
	AddVoter(id, raftAddr string) error
	RemoveServer(id string) error
	NodeID() string
	Role() string
	// ClusterID is the cluster's id ("" until the node has one; replica/clusterid.go).
	ClusterID() string
}

// clusterJSON is GET /api/v1/cluster's answer and the changes' answer.
type clusterJSON struct {
	NodeID    string           `json:"nodeId"`
	Role      string           `json:"role"`
	ClusterID string           `json:"clusterId"`
	Members   []replica.Member `json:"members"`
}

// membership returns the node's Membership, or answers 404 on a single node.
func (s *Server) membership(ctx *fasthttp.RequestCtx) (Membership, bool) {
	m, ok := s.cfg.Cluster.(Membership)
	if !ok || m == nil {
		writeError(ctx, fasthttp.StatusNotFound, "this node is not part of a replicated cluster (comb serve --node-id, --raft-addr, --initial-cluster)")
		return nil, false
	}
	return m, true
}

func (s *Server) clusterInfo(ctx *fasthttp.RequestCtx) {
	m, ok := s.membership(ctx)
	if !ok {
		return
	}
	s.sendCluster(ctx, m)
}

func (s *Server) sendCluster(ctx *fasthttp.RequestCtx, m Membership) {
	ms, err := m.Members()
	if err != nil {
		s.clusterFail(ctx, err)
		return
	}
	if ms == nil {
		ms = []replica.Member{}
	}
	s.sendValue(ctx, fasthttp.StatusOK, clusterJSON{NodeID: m.NodeID(), Role: m.Role(), ClusterID: m.ClusterID(), Members: ms})
}

// addMember is POST /api/v1/cluster/members {"id": "n4", "raftAddr": "10.0.0.4:7001"}: the
// node joins as a voter once the change commits (it should have been started with
// --initial-cluster-state existing).
func (s *Server) addMember(ctx *fasthttp.RequestCtx) {
	m, ok := s.membership(ctx)
	if !ok {
		return
	}
	var req struct {
		ID       string `json:"id"`
		RaftAddr string `json:"raftAddr"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil {
		badRequest(ctx, "body must be a JSON object {\"id\": string, \"raftAddr\": \"host:port\"}")
		return
	}
	if err := replica.CheckPeer(replica.Peer{ID: req.ID, Addr: req.RaftAddr}); err != nil {
		badRequest(ctx, err.Error())
		return
	}
	if err := m.AddVoter(req.ID, req.RaftAddr); err != nil {
		s.clusterFail(ctx, err)
		return
	}
	s.sendCluster(ctx, m)
}

// removeMember is DELETE /api/v1/cluster/members/:id.
func (s *Server) removeMember(ctx *fasthttp.RequestCtx, id string) {
	m, ok := s.membership(ctx)
	if !ok {
		return
	}
	if err := m.RemoveServer(id); err != nil {
		s.clusterFail(ctx, err)
		return
	}
	s.sendCluster(ctx, m)
}

// clusterFail maps a membership error: 404 for an unknown member, 409 for an address another
// member has or the removal of the only voter, 400 for a member nothing answers for, 503 (retry) when this node
// does not lead or the change could not be taken in now, else 500.
func (s *Server) clusterFail(ctx *fasthttp.RequestCtx, err error) {
	var r interface{ Retryable() bool }
	switch {
	case errors.Is(err, replica.ErrUnknownMember):
		writeError(ctx, fasthttp.StatusNotFound, err.Error())
	case errors.Is(err, replica.ErrUnreachable):
		badRequest(ctx, err.Error())
	case errors.Is(err, replica.ErrAddrInUse), errors.Is(err, replica.ErrLastMember):
		writeError(ctx, fasthttp.StatusConflict, err.Error())
	case errors.Is(err, replica.ErrNotLeader), errors.As(err, &r) && r.Retryable():
		unavailable(ctx, "Service unavailable: "+err.Error())
	default:
		s.fail(ctx, err)
	}
}
