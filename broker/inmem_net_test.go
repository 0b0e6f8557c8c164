package broker

import (
	"sync"
	"testing"

	"github.com/combmq/comb/replica"
	"github.com/hashicorp/raft"
)

// inmemNet carries a test cluster's raft RPCs over raft's InmemTransport, so a
// test cuts and heals links (each direction on its own) without a network:
// the tests of what the broker does when a leader is cut off.
type inmemNet struct {
	mu    sync.Mutex
	trans map[string]*raft.InmemTransport // by raft address, the newest per node
	cut   map[[2]string]bool              // {from, to}: from cannot send to to
}

func newInmemNet() *inmemNet {
	return &inmemNet{trans: map[string]*raft.InmemTransport{}, cut: map[[2]string]bool{}}
}

// join makes a transport for addr (a node opening, or reopening) and links it
// with every other node in each direction that is not cut.
func (m *inmemNet) join(addr string) *raft.InmemTransport {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, t := raft.NewInmemTransport(raft.ServerAddress(addr))
	for o, ot := range m.trans {
		if o == addr {
			continue
		}
		if !m.cut[[2]string{addr, o}] {
			t.Connect(raft.ServerAddress(o), ot)
		}
		if !m.cut[[2]string{o, addr}] {
			ot.Connect(raft.ServerAddress(addr), t)
		}
	}
	m.trans[addr] = t
	return t
}

// setCut cuts (or heals) the direction from → to: from's RPCs to to fail at
// once; to's RPCs to from, and their answers, still pass.
func (m *inmemNet) setCut(from, to string, cut bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cut[[2]string{from, to}] = cut
	ft, tt := m.trans[from], m.trans[to]
	if ft == nil || tt == nil {
		return
	}
	if cut {
		ft.Disconnect(raft.ServerAddress(to))
	} else {
		ft.Connect(raft.ServerAddress(to), tt)
	}
}

// isolate cuts (or heals) every link of node, both ways.
func (m *inmemNet) isolate(nodes []*clusterNode, node *clusterNode, cut bool) {
	addr := addrOf(node)
	for _, o := range nodes {
		if o != node {
			m.setCut(addr, addrOf(o), cut)
			m.setCut(addrOf(o), addr, cut)
		}
	}
}

func addrOf(n *clusterNode) string {
	for _, p := range n.peers {
		if p.ID == n.id {
			return p.Addr
		}
	}
	return ""
}

// startInmemCluster is startClusterWith over an inmemNet.
func startInmemCluster(t testing.TB, n int, timing raftTiming) ([]*clusterNode, *inmemNet) {
	return startInmemClusterConf(t, n, timing, nil)
}

// startInmemClusterConf is startInmemCluster with conf applied to every
// node's broker Config.
func startInmemClusterConf(t testing.TB, n int, timing raftTiming, conf func(*Config)) ([]*clusterNode, *inmemNet) {
	t.Helper()
	net := newInmemNet()
	peers := make([]replica.Peer, n)
	for i := range peers {
		id := "n" + string(rune('1'+i))
		peers[i] = replica.Peer{ID: id, Addr: "inmem-" + id + ":1"}
	}
	nodes := make([]*clusterNode, n)
	for i, p := range peers {
		node := &clusterNode{id: p.ID, dir: t.TempDir(), peers: peers, timing: timing, net: net, conf: conf}
		node.open(t)
		nodes[i] = node
		t.Cleanup(func() { node.close() })
	}
	waitLeader(t, nodes)
	return nodes, net
}
