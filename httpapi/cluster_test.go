package httpapi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/replica"
)

// fakeMembers is a leading node with membership (cluster.go's Membership).
type fakeMembers struct {
	fakeCluster
	members []replica.Member
	addErr  error
	added   []string
}

func (m *fakeMembers) Members() ([]replica.Member, error) { return m.members, nil }
func (m *fakeMembers) Role() string                       { return "leader" }
func (m *fakeMembers) ClusterID() string                  { return "c0ffee" }

func (m *fakeMembers) AddVoter(id, addr string) error {
	if m.addErr != nil {
		return m.addErr
	}
	for _, x := range m.members {
		if x.RaftAddr == addr && x.ID != id {
			return fmt.Errorf("%w: %s is at %s", replica.ErrAddrInUse, x.ID, addr)
		}
	}
	m.added = append(m.added, id+"="+addr)
	m.members = append(m.members, replica.Member{ID: id, RaftAddr: addr, Voter: true})
	return nil
}

func (m *fakeMembers) RemoveServer(id string) error {
	if len(m.members) == 1 && m.members[0].ID == id {
		return fmt.Errorf("%w: %s", replica.ErrLastMember, id)
	}
	for i, x := range m.members {
		if x.ID == id {
			m.members = append(m.members[:i], m.members[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("%w: %s", replica.ErrUnknownMember, id)
}

// Issue 15: the membership routes list, add and remove members on the leader, with 400 for a
// bad body or member, 404 for an unknown member, 503 + Retry-After when the node cannot change
// membership now; a single node answers 404.
func TestClusterMembershipRoutes(t *testing.T) {
	single := startServer(t, newFake(), Config{})
	r := single.do("GET", "/api/v1/cluster", "")
	require.Equal(t, 404, r.status)
	require.Contains(t, string(r.body), "not part of a replicated cluster")

	m := &fakeMembers{fakeCluster: fakeCluster{self: "n1", leading: true},
		members: []replica.Member{{ID: "n1", RaftAddr: "127.0.0.1:7001", HTTPAddr: "127.0.0.1:6632", Voter: true, Leader: true}}}
	ts := startServer(t, newFake(), Config{Cluster: m})
	r = ts.do("GET", "/api/v1/cluster", "")
	require.Equal(t, 200, r.status, "%s", r.body)
	require.JSONEq(t, `{"nodeId":"n1","role":"leader","clusterId":"c0ffee","members":[{"id":"n1","raftAddr":"127.0.0.1:7001","httpAddr":"127.0.0.1:6632","voter":true,"leader":true}]}`, string(r.body))

	for _, body := range []string{`[]`, `{"id":"n2"}`, `{"id":"n 2","raftAddr":"127.0.0.1:7002"}`, `{"id":"n2","raftAddr":"127.0.0.1"}`,
		`{"id":"n2","raftAddr":":7002"}`, `{"id":"n2","raftAddr":"0.0.0.0:7002"}`, `{"id":"n2","raftAddr":"127.0.0.1:abc"}`, `{"id":"n2","raftAddr":"127.0.0.1:99999"}`} {
		r = ts.do("POST", "/api/v1/cluster/members", body)
		require.Equal(t, 400, r.status, "%s: %s", body, r.body)
	}
	r = ts.do("POST", "/api/v1/cluster/members", `{"id":"n2","raftAddr":"127.0.0.1:7002"}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, []string{"n2=127.0.0.1:7002"}, m.added)
	require.Contains(t, string(r.body), `{"id":"n2","raftAddr":"127.0.0.1:7002","httpAddr":"","voter":true,"leader":false}`)

	// another id at a member's raft address is the client's mistake: 409, nothing added
	r = ts.do("POST", "/api/v1/cluster/members", `{"id":"n3","raftAddr":"127.0.0.1:7001"}`)
	require.Equal(t, 409, r.status, "%s", r.body)
	require.Contains(t, string(r.body), "another member has this raft address")
	require.Equal(t, []string{"n2=127.0.0.1:7002"}, m.added)

	r = ts.do("DELETE", "/api/v1/cluster/members/n9", "")
	require.Equal(t, 404, r.status, "%s", r.body)
	r = ts.do("DELETE", "/api/v1/cluster/members/n2", "")
	require.Equal(t, 200, r.status, "%s", r.body)
	require.NotContains(t, string(r.body), `"n2"`)
	r = ts.do("DELETE", "/api/v1/cluster/members/n1", "")
	require.Equal(t, 409, r.status, "the only voter: %s", r.body)
	require.Contains(t, string(r.body), "the only voter cannot be removed")

	m.addErr = fmt.Errorf("%w: n3 at 127.0.0.1:7003", replica.ErrUnreachable)
	r = ts.do("POST", "/api/v1/cluster/members", `{"id":"n3","raftAddr":"127.0.0.1:7003"}`)
	require.Equal(t, 400, r.status, "a member nothing answers for: %s", r.body)

	m.addErr = replica.ErrNotLeader
	r = ts.do("POST", "/api/v1/cluster/members", `{"id":"n3","raftAddr":"127.0.0.1:7003"}`)
	require.Equal(t, 503, r.status, "%s", r.body)
	require.Equal(t, "1", r.header.Get("Retry-After"))
}

// Issue 15: a request whose entry (a push, a pop's or an ack's checkpoint) met a lost leadership
// answers 503 + Retry-After (Queen's clients retry it), not a logged 500.
func TestLostLeadershipIs503(t *testing.T) {
	for _, cause := range []error{
		fmt.Errorf("broker: commit log: %w", &replica.CommitError{LSN: 7, Err: errors.New("leadership lost while committing log")}),
		fmt.Errorf("cursor checkpoint failed (retrying): %w", replica.ErrNotLeader),
		broker.ErrStale,
	} {
		fake := newFake()
		fake.onPush = func([]broker.PushItem) ([]broker.PushResult, error) { return nil, cause }
		ts := startServer(t, fake, Config{})
		r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q"}]}`)
		require.Equal(t, 503, r.status, "%v: %s", cause, r.body)
		require.Equal(t, "1", r.header.Get("Retry-After"))
	}
}
