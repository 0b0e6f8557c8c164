package replica

import (
	"context"
	"fmt"
	"net"

	"github.com/hashicorp/raft"
)

// PeerHTTP is the listener of the requests other members forward to this node while it leads:
// connections on the raft port whose handshake asked for HTTP (peer.go), authenticated as the
// cluster's like raft's. The HTTP server serves it (httpapi Server.ServePeer); Close of the
// Log closes it.
func (l *Log) PeerHTTP() net.Listener { return l.peers.httpLn }

// DialPeer opens a connection to member id's raft port for a forwarded HTTP request: mutual
// TLS against the cluster CA (with Config.PeerTLS) and the handshake, so a client's token only
// travels to a node that proved it is a member of this cluster. The address is raft's for id
// (the leader's as raft knows it, else the configuration's), never one a log entry announced.
//
// Errors: ErrClosed before Start, ErrUnknownMember for an id raft does not know, the dial's
// (peer.go).
func (l *Log) DialPeer(ctx context.Context, id string) (net.Conn, error) {
	if l.r == nil {
		return nil, ErrClosed
	}
	addr, leader := l.r.LeaderWithID()
	if string(leader) != id || addr == "" {
		addr = ""
		f := l.r.GetConfiguration()
		if err := f.Error(); err != nil {
			return nil, fmt.Errorf("replica: configuration: %w", err)
		}
		for _, s := range f.Configuration().Servers {
			if string(s.ID) == id {
				addr = s.Address
			}
		}
		if addr == "" {
			return nil, fmt.Errorf("%w: %s", ErrUnknownMember, id)
		}
	}
	return l.peers.dial(ctx, string(addr), purposeHTTP)
}

// ClusterID is the cluster's id as this node keeps it ("" until the first leader's id reached
// it; clusterid.go).
func (l *Log) ClusterID() string { return l.ident.get().id }

// ping checks that a member answers at addr and admits this node (AddVoter).
func (l *Log) ping(ctx context.Context, addr raft.ServerAddress) error {
	c, err := l.peers.dial(ctx, string(addr), purposePing)
	if err != nil {
		return err
	}
	return c.Close()
}
