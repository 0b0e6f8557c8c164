package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The peer handshake (issue 22): the first bytes of every connection between members, over
// TLS once it is established (peer.go), before raft or a forwarded HTTP request reads a byte.
// The dialer sends its hello; the listener answers with its own hello and a verdict, then
// closes the connection if it refuses, or hands it to raft or to the HTTP server the purpose
// names. Both sides decide with the same rule (admit), so each also refuses what the other
// should have.
//
// hello:
//
//	+-------+---------+---------+-------+---------+---------+---------+------------+---------+
//	| magic | version | purpose | flags | id len  | node id | cid len | cluster id | hash    |
//	| comb  | u8 (1)  | u8      | u8    | u8 1-255|         | u8 0-64 |            | 32 bytes|
//	+-------+---------+---------+-------+---------+---------+---------+------------+---------+
//
// flags bit 0: the node joins (--initial-cluster-state existing) and has no cluster id yet.
// hash: with a cluster id, the hash of the --initial-cluster the cluster was bootstrapped
// with; without one, the hash of the node's own --initial-cluster (clusterid.go).
//
// The listener's answer is its hello (purpose echoed) followed by:
//
//	+---------+-------------+---------+
//	| verdict | message len | message |
//	| u8      | u16 BE      | UTF-8   |
//	+---------+-------------+---------+
//
// verdict 0 admits; 1 refuses a member of another cluster; 2 refuses another --initial-cluster.

const (
	helloMagic   = "comb"
	helloVersion = 1
	// maxHelloMessage bounds a verdict's message.
	maxHelloMessage = 1024
)

// What a connection carries after the handshake.
const (
	purposeRaft = 1 // raft's RPCs (NetworkTransport)
	purposeHTTP = 2 // a request a follower forwards to the leader (Log.PeerHTTP)
	purposePing = 3 // nothing: AddVoter's check that the new member answers
)

// Verdicts.
const (
	verdictAdmit          = 0
	verdictForeign        = 1
	verdictInitialCluster = 2
)

const flagJoin = 1

// Errors of the handshake.
var (
	// ErrBadHello: a connection's first bytes are not a comb peer's hello.
	ErrBadHello = errors.New("replica: not a comb peer handshake")
	// ErrForeignCluster: the peer (or this node's directory) belongs to another cluster; a
	// connection is never admitted, an entry never applied.
	ErrForeignCluster = errors.New("replica: a member of another cluster")
	// ErrInitialClusterMismatch: the peer was started with another --initial-cluster while
	// the cluster has no id yet (or the peer has none and presents another list than the one
	// the cluster was bootstrapped with).
	ErrInitialClusterMismatch = errors.New("replica: another --initial-cluster")
)

// hello is one side of the handshake.
type hello struct {
	purpose byte
	node    string
	cluster string // "" = none yet
	hash    clusterHash
	join    bool
}

func encodeHello(h hello) []byte {
	b := make([]byte, 0, len(helloMagic)+5+len(h.node)+len(h.cluster)+len(h.hash))
	b = append(b, helloMagic...)
	var flags byte
	if h.join {
		flags |= flagJoin
	}
	b = append(b, helloVersion, h.purpose, flags, byte(len(h.node)))
	b = append(b, h.node...)
	b = append(b, byte(len(h.cluster)))
	b = append(b, h.cluster...)
	return append(b, h.hash[:]...)
}

// readHello reads exactly one hello from r (never past it: what follows belongs to raft or
// HTTP).
//
// Errors: ErrBadHello for another magic or version, an unknown purpose or flag, an empty node
// id, a cluster id checkClusterID refuses; r's (io.ErrUnexpectedEOF for a short one).
func readHello(r io.Reader) (hello, error) {
	var fixed [len(helloMagic) + 4]byte // magic, version, purpose, flags, node id length
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return hello{}, err
	}
	if string(fixed[:4]) != helloMagic || fixed[4] != helloVersion {
		return hello{}, fmt.Errorf("%w: starts %x", ErrBadHello, fixed[:5])
	}
	h := hello{purpose: fixed[5], join: fixed[6]&flagJoin != 0}
	if h.purpose < purposeRaft || h.purpose > purposePing || fixed[6]&^flagJoin != 0 || fixed[7] == 0 {
		return hello{}, fmt.Errorf("%w: purpose %d, flags %#x, node id of %d bytes", ErrBadHello, h.purpose, fixed[6], fixed[7])
	}
	node := make([]byte, int(fixed[7])+1) // the id and the cluster id's length
	if _, err := io.ReadFull(r, node); err != nil {
		return hello{}, err
	}
	h.node = string(node[:len(node)-1])
	n := int(node[len(node)-1])
	if n > maxClusterIDLen {
		return hello{}, fmt.Errorf("%w: cluster id of %d bytes", ErrBadHello, n)
	}
	rest := make([]byte, n+len(h.hash))
	if _, err := io.ReadFull(r, rest); err != nil {
		return hello{}, err
	}
	h.cluster = string(rest[:n])
	copy(h.hash[:], rest[n:])
	if h.cluster != "" {
		if err := checkClusterID(h.cluster); err != nil {
			return hello{}, fmt.Errorf("%w: %w", ErrBadHello, err)
		}
	}
	return h, nil
}

func encodeVerdict(v byte, msg string) []byte {
	if len(msg) > maxHelloMessage {
		msg = msg[:maxHelloMessage]
	}
	b := []byte{v, 0, 0}
	binary.BigEndian.PutUint16(b[1:], uint16(len(msg)))
	return append(b, msg...)
}

// readVerdict reads the verdict after the listener's hello.
//
// Errors: ErrBadHello for an unknown verdict or a message past maxHelloMessage; r's.
func readVerdict(r io.Reader) (byte, string, error) {
	var b [3]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, "", err
	}
	n := int(binary.BigEndian.Uint16(b[1:]))
	if b[0] > verdictInitialCluster || n > maxHelloMessage {
		return 0, "", fmt.Errorf("%w: verdict %d with a message of %d bytes", ErrBadHello, b[0], n)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return 0, "", err
	}
	return b[0], string(msg), nil
}

// verdictErr is the sentinel a refusing verdict stands for.
func verdictErr(v byte) error {
	switch v {
	case verdictForeign:
		return ErrForeignCluster
	case verdictInitialCluster:
		return ErrInitialClusterMismatch
	}
	return nil
}

func verdictOf(err error) byte {
	switch {
	case err == nil:
		return verdictAdmit
	case errors.Is(err, ErrForeignCluster):
		return verdictForeign
	}
	return verdictInitialCluster
}

// admit decides whether this node (local) and a peer (remote) belong to one cluster, and
// whether this node adopts the peer's cluster id:
//
//   - both have an id: the same one, else ErrForeignCluster (a node or a directory of another
//     cluster is never merged);
//   - neither has one (a new cluster before its first leader's id committed): the same
//     --initial-cluster hash, else ErrInitialClusterMismatch, unless one of them joins;
//   - one has an id: the other (a new or emptied directory, or a member the id has not reached
//     yet) presents the hash the cluster was bootstrapped with, or joins, else
//     ErrInitialClusterMismatch; this node adopts the id if it is the one without.
func admit(local, remote hello) (adopt bool, err error) {
	switch {
	case local.cluster != "" && remote.cluster != "":
		if local.cluster != remote.cluster {
			return false, fmt.Errorf("%w: %s belongs to cluster %s, this node to cluster %s (its data directory's raft/%s); a node or a directory of another cluster is never merged: give it an empty data directory and add it as a member",
				ErrForeignCluster, remote.node, remote.cluster, local.cluster, clusterIDFile)
		}
		return false, nil
	case local.cluster == "" && remote.cluster == "":
		if local.join || remote.join || local.hash == remote.hash {
			return false, nil
		}
		return false, fmt.Errorf("%w: %s was started with another --initial-cluster than this node (sha256 %s…, this node's %s…); every member of a new cluster must be given the same list",
			ErrInitialClusterMismatch, remote.node, remote.hash.short(), local.hash.short())
	}
	fresh, member := local, remote
	if local.cluster != "" {
		fresh, member = remote, local
	}
	if !fresh.join && fresh.hash != member.hash {
		return false, fmt.Errorf("%w: %s has no cluster id yet and another --initial-cluster (sha256 %s…) than cluster %s was bootstrapped with (%s…); a new member joins with --initial-cluster-state existing",
			ErrInitialClusterMismatch, fresh.node, fresh.hash.short(), member.cluster, member.hash.short())
	}
	return local.cluster == "", nil
}
