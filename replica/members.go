package replica

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/raft"
)

// Membership changes (docs/operations.md, "Grow, shrink, repair"): raft's
// single-server changes, on the leader, one at a time. A node added with an
// empty data directory catches up by snapshot install (snapshot_install.go);
// a removed node stops being sent entries and should be stopped.

// membershipTimeout bounds how long a change waits for raft to take it in.
const membershipTimeout = 30 * time.Second

// ErrUnknownMember: RemoveServer of a node the configuration does not name.
var ErrUnknownMember = errors.New("replica: no such member")

// ErrLastMember: RemoveServer of the cluster's only voter (raft keeps at
// least one; a client's mistake, not the server's).
var ErrLastMember = errors.New("replica: the only voter cannot be removed")

// ErrUnreachable: AddVoter of an address nothing answers at. Raft would
// commit the voter anyway, and with it a quorum the live nodes may not
// reach: one node plus an unreachable voter is a cluster with no leader
// that cannot remove the voter again.
var ErrUnreachable = errors.New("replica: nothing answers at the new member's raft address")

// reachTimeout bounds AddVoter's dial of the new member's raft address.
const reachTimeout = 2 * time.Second

// ErrAddrInUse: AddVoter of an address another member already has (raft
// refuses the configuration; a client's mistake, not the server's).
var ErrAddrInUse = errors.New("replica: another member has this raft address")

// Member is one server of the cluster's configuration.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	// HTTPAddr is the address the node announced when it last led, ""
	// when it has not (announce.go).
	HTTPAddr string `json:"httpAddr"`
	Voter    bool   `json:"voter"`
	Leader   bool   `json:"leader"`
}

// Members lists the cluster's configuration as this node knows it, sorted
// by id.
//
// Errors: raft's, or ErrClosed before Start.
func (l *Log) Members() ([]Member, error) {
	if l.r == nil {
		return nil, ErrClosed
	}
	f := l.r.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("replica: configuration: %w", err)
	}
	_, leader := l.r.LeaderWithID()
	addrs := l.addrs.copy()
	var out []Member
	for _, s := range f.Configuration().Servers {
		out = append(out, Member{ID: string(s.ID), RaftAddr: string(s.Address), HTTPAddr: addrs[string(s.ID)],
			Voter: s.Suffrage == raft.Voter, Leader: s.ID == leader})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// AddVoter adds node id, reachable by raft at addr, as a voter (or changes
// the address of a member with that id), and returns once the change is
// committed. Only the leader changes membership.
//
// Before the change the leader dials addr once (the peer handshake, at most
// reachTimeout): a member nobody listens for yet, or one that does not admit
// this cluster (another CA, another cluster id), is refused, since the docs'
// order is to start the node first.
//
// Errors: ErrNotLeader, ErrAddrInUse, ErrUnreachable, raft's (a change
// already under way, a timeout).
func (l *Log) AddVoter(id, addr string) error {
	if id == "" || addr == "" {
		return errors.New("replica: a member needs an id and a raft address")
	}
	if l.r == nil || !l.Leading() {
		return ErrNotLeader
	}
	ms, err := l.Members()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.RaftAddr == addr && m.ID != id {
			return fmt.Errorf("%w: %s is at %s", ErrAddrInUse, m.ID, addr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), reachTimeout)
	err = l.ping(ctx, raft.ServerAddress(addr))
	cancel()
	if err != nil {
		return fmt.Errorf("%w: %s at %s (start it first, with --initial-cluster-state existing and the cluster's peer certificates): %w", ErrUnreachable, id, addr, err)
	}
	if err := l.r.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, membershipTimeout).Error(); err != nil {
		return fmt.Errorf("replica: add %s at %s: %w", id, addr, err)
	}
	return nil
}

// RemoveServer removes node id from the configuration and returns once the
// change is committed. Removing the leader itself makes it step down once
// the change commits (it is then stale and restarts, outside the cluster).
//
// Errors: ErrNotLeader, ErrUnknownMember, ErrLastMember, raft's.
func (l *Log) RemoveServer(id string) error {
	if l.r == nil || !l.Leading() {
		return ErrNotLeader
	}
	ms, err := l.Members()
	if err != nil {
		return err
	}
	found, voters := false, 0
	for _, m := range ms {
		found = found || m.ID == id
		if m.Voter {
			voters++
		}
	}
	if !found {
		return fmt.Errorf("%w: %s", ErrUnknownMember, id)
	}
	if voters == 1 {
		return fmt.Errorf("%w: %s (stop it instead; its directory without raft/ serves as a single node)", ErrLastMember, id)
	}
	if err := l.r.RemoveServer(raft.ServerID(id), 0, membershipTimeout).Error(); err != nil {
		return fmt.Errorf("replica: remove %s: %w", id, err)
	}
	return nil
}
