// Package clustertest proves a replicated comb's promises under faults (issue 15, "Proof under
// faults"): it starts three real `comb serve` processes on loopback as one cluster, drives a
// mixed load through random nodes, and meanwhile kills the leader with SIGKILL, pauses a node
// with SIGSTOP past raft's election timeout, restarts a follower with SIGTERM, or partitions the
// network (issue 22, netcut_test.go): the leader or a follower cut off from both others, or a
// one-way cut between the leader and a follower, for 2.5 to 4 s. A cut drops, by an iptables
// rule matching the group id each node runs with, the packets a node's sockets send to
// another's raft and HTTP ports; it needs root and iptables (CLUSTER_PARTITIONS=0 runs without
// them, and says so). It owns no
// production code: everything lives in test files behind the `cluster` build tag, run by
// `make clustertest` (go test -tags cluster -run Cluster ./replica/clustertest/).
//
// The client behaves as Queen's clients do in a failover: a request that meets a connection
// error, a timeout or a 5xx is sent again to another node after a short backoff, and a push
// keeps its transactionIds, so the broker's dedup makes the retry idempotent. The node an
// evidence line names is the one the client asked; a follower forwards to the leader.
//
// The load: pushers (batches of 1..10 messages with unique transactionIds to a few
// partitions of one queue), consumers of one group popping and acking through
// /api/v1/ack/batch (all, a prefix, a "retry" nack, or nothing: the lease expires), and
// consumers of a second group that ack through /api/v1/transaction together with a push of one
// derived message each to a second queue. A monitor polls every node's /health.
//
// What it checks at the end, after the working groups drained what was left and a fresh group
// read both queues from the start (autoAck):
//
//  1. no acknowledged push lost: every push answered 201 ("queued" or "duplicate") and every
//     push of a transaction answered success:true is read by the fresh group exactly once, with
//     the message id its answer gave; nothing is read that was never sent; an aborted
//     transaction (no attempt with an unknown outcome) left no message; every acknowledged push
//     reached each working group at least once;
//  2. no message whose ack was answered success is delivered to that group again by a pop sent
//     after the answer;
//  3. no message is held by two live leases at once: a second delivery to the same group whose
//     answer arrived before the first pop was sent plus the queue's leaseTime (so before the
//     first lease can have expired), unless a nack of the first lease, or an ack reaching the
//     end of its span, was sent before it;
//  4. cursors never go back: a node's /health appliedLSN never decreases while its process
//     image lives (a deposed leader re-executes itself: /metrics' uptime tells the images
//     apart), and no pop sent after an ack of offset k in a partition (answered success)
//     delivers an offset below k to that group (offsets: the order of the fresh group's read);
//  6. client-visible reads never go back: readers ask random nodes for the working groups'
//     cursors (GET /api/v1/consumer-groups/:group) through every fault, and no read sent after
//     another read's answer shows a lower totalConsumed for a partition (reads_test.go);
//  5. the replicas agree: once every node applied the same LSN, each node's message list
//     (GET /api/v1/messages, read locally) holds exactly the messages the fresh group read,
//     with the same ids (a deposed leader's uncommitted writes show up here);
//
// and that the cluster elects one leader again after every fault (within 45 s), that no node
// exits by itself or logs a divergence, and that no node's /health stays other than "healthy"
// for 5 s or names a damaged partition. It prints the figures (acknowledged pushes,
// deliveries, acks, transactions, faults by kind, failover times: fault to the first push and
// the first pop answered by a request sent after it) and every violation with its evidence, and
// fails on any. The nodes' data directories and logs, the report and the ledger (deliveries,
// acks and pushes as .tsv, the evidence behind a violation) are kept when it fails (the path
// is printed) and removed when it passes, unless CLUSTER_KEEP=1.
//
// It knows the HTTP API and the `comb serve` command line and imports no comb package.
//
// Knobs (environment): CLUSTER_FAULTS (default 50; CI runs 7, one of each kind), CLUSTER_PARTITIONS
// (default 1; 0 leaves the partitions out), CLUSTER_SEED (default
// time-based, printed), CLUSTER_PUSHERS (default 3), CLUSTER_CONSUMERS (per group, default 2),
// CLUSTER_RUN_MS (longest load between a settled cluster and the next fault, default 2500),
// CLUSTER_LEASE_S (the queue's leaseTime, default 3), CLUSTER_WARMUP_MS (load before the first
// fault, default 0), CLUSTER_KEEP (keep the directories).
package clustertest
