package replica

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// awaitLeaderHTTPByNews waits for n to name want and its announced HTTP
// address, looking only when LeaderChanged says something changed (never on
// a timer): a change that fired no news would leave it waiting until the
// give-up, and fail.
func awaitLeaderHTTPByNews(t *testing.T, n *testNode, want string) {
	t.Helper()
	giveUp := time.After(30 * time.Second)
	for {
		changed := n.log.LeaderChanged()
		if id, addr := n.log.LeaderHTTP(); id == want && addr == httpAddrOf(want) {
			return
		}
		select {
		case <-changed:
		case <-giveUp:
			id, addr := n.log.LeaderHTTP()
			t.Fatalf("%s names leader %q at %q, want %s at %s", n.log.NodeID(), id, addr, want, httpAddrOf(want))
		}
	}
}

// LeaderChanged closes its channel when raft names another leader and when
// the leader's announcement sets its HTTP address (httpapi's forwarder
// waits on it for a new leader's address, issue 26): a waiter that looks only
// on news learns each new leader and its address, on every node.
func TestLeaderChangedBringsEachNewLeadersAddress(t *testing.T) {
	nodes := startNodes(t, 3)
	leader := leaderOf(t, nodes, nil)
	for _, n := range nodes {
		awaitLeaderHTTPByNews(t, n, leader.log.NodeID())
	}
	require.NoError(t, leader.log.Close())
	next := leaderOf(t, nodes, leader)
	for _, n := range nodes {
		if n != leader {
			awaitLeaderHTTPByNews(t, n, next.log.NodeID())
		}
	}
}
