// Package replica is comb's commit log replicated by raft
// (github.com/hashicorp/raft, issue 15): the broker appends to it as to its
// local commit log, an entry's ticket completes once a quorum holds it and
// this node applied it, and every other node hands the entry to its broker
// (Applier), which applies it as its start-up replay would. It owns the raft
// node (transport, log and stable store, snapshot store), the raft port's
// mutual TLS and cluster-id handshake (peer.go, peer_hello.go, clusterid.go), LSN
// assignment, the leader's readiness and announced HTTP address, the stale
// signal of a deposed node (Log.Stale), snapshot install (snapshot_install.go,
// archive.go) and membership (members.go); it must not know what an entry
// means (a kind byte and opaque bytes, as package commitlog) nor import the
// broker.
//
// # Files
//
//	<data>/raft/wal/         raft's log and stable store (hashicorp/raft-wal)
//	<data>/raft/snapshots/   raft's snapshots: this node's are markers (LSN, node id,
//	                         HTTP addresses; fsm.go), received ones carry another
//	                         node's data directory (archive.go)
//	<data>/raft/installed    the id of the received snapshot the data directory holds
//	<data>/raft/cluster-id   the cluster's id and its bootstrap --initial-cluster hash (JSON)
//	<data>/install-tmp/      a received snapshot being installed (PrepareDataDir)
//
// # Command format
//
// Each comb entry is one raft command (raft.Log.Data):
//
//	+---------+---------+------------+---------+-------------------+
//	| version | LSN     | origin     | kind    | payload ...       |
//	| u8 (1)  | u64 BE  | u64 BE     | u8      | to the end        |
//	+---------+---------+------------+---------+-------------------+
//
// The LSN is comb's (the broker needs it when it appends; raft's index is
// known only after dispatch and counts raft's own entries too). A new
// leader numbers on from the highest LSN it applied, after a barrier, so
// LSNs increase along the committed log; an entry proposed by a deposed
// leader and never committed may share its LSN with a later one, and is
// never applied anywhere. origin is random per Log value: the proposer
// skips its own entries (its handler applied them), every other node and
// the proposer's next incarnation apply them.
//
// The first byte tells a comb entry (1) from this package's own commands.
// Two exist. A leader's announcement of its HTTP address (announce.go),
// proposed once per term after the barrier, for /health and to tell
// followers it is ready (they forward to its raft port, peer.go):
//
//	+---------+------------+---------+------------------------+
//	| version | id length  | node id | HTTP address host:port |
//	| u8 (2)  | u8 (1-255) |         | to the end             |
//	+---------+------------+---------+------------------------+
//
// The other: the cluster id (clusterid.go), proposed once by the first
// ready leader of a cluster without one:
//
//	+---------+------------+------------+-----------------------------+
//	| version | id length  | cluster id | initial-cluster SHA-256     |
//	| u8 (3)  | u8 (1-64)  |            | 32 bytes                    |
//	+---------+------------+------------+-----------------------------+
//
// Every node applies them, the proposer included; they take no LSN and never
// reach the broker, whose entries stay numbered without a gap. A build
// that reads only version 1 refuses them (ErrBadEntry: an unknown version)
// rather than mistake them for entries; a node that applied no cluster id
// takes it in the handshake instead. Because raft compacts announcements
// away with the rest of its log, the snapshot marker carries the id → address
// map too (fsm.go, marker version 2 and later).
//
// # What a ticket promises
//
// Wait returns nil once the entry is committed (on a quorum's disks: raft-wal
// fsyncs every append) and applied on this node. Entries commit in LSN
// order. A failed wait after leadership was lost does not say the entry is
// lost: the next leader may commit it.
package replica
