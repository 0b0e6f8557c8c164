package replica

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/combmq/comb/lsn"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// Errors of Log.
var (
	// ErrNotLeader: this node is not the leader (or is a new leader still
	// catching up); nothing was appended. The caller forwards or redirects.
	// Retryable (a later term may make this node the leader).
	ErrNotLeader error = retryableError("replica: not the leader")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("replica: closed")
	// ErrDiverged: a committed entry could not be applied here; this node's
	// state no longer follows the log until it is rebuilt.
	ErrDiverged = errors.New("replica: a committed entry failed to apply")
	// ErrSnapshotInstall: the leader sent a snapshot of its own state (this
	// node fell behind raft's retained log); installing one is not built.
	ErrSnapshotInstall = errors.New("replica: cannot install another node's snapshot")
	// ErrBadSnapshot: a snapshot this package did not write.
	ErrBadSnapshot = errors.New("replica: not a comb snapshot marker")
)

// retryableError is a refusal that a later leader or term lifts: the
// broker's cursor engine retries instead of stopping (its Log.Retryable).
type retryableError string

func (e retryableError) Error() string   { return string(e) }
func (e retryableError) Retryable() bool { return true }

// CommitError is a failed wait: raft's reason for entry LSN.
type CommitError struct {
	LSN uint64
	Err error
}

func (e *CommitError) Error() string { return fmt.Sprintf("replica: entry %d: %v", e.LSN, e.Err) }
func (e *CommitError) Unwrap() error { return e.Err }

// Retryable: leadership lost or moved, or raft stopping, is a state of the
// cluster, not of this node's storage; a later leader may commit what is
// appended then (the broker's cursor engine then retries, not stops).
func (e *CommitError) Retryable() bool {
	return errors.Is(e.Err, raft.ErrLeadershipLost) || errors.Is(e.Err, raft.ErrNotLeader) ||
		errors.Is(e.Err, raft.ErrRaftShutdown) || errors.Is(e.Err, raft.ErrLeadershipTransferInProgress)
}

// Applier is what a follower hands each committed entry proposed by another
// node (the broker: it applies the entry as its start-up replay would).
type Applier interface {
	ApplyReplicated(lsn uint64, kind byte, payload []byte) error
	// CommittedOwn hears of each entry this node proposed once it is
	// committed (in log order; the handler applied it before proposing):
	// the broker's committed offsets on the leader.
	CommittedOwn(lsn uint64, kind byte, payload []byte)
	// Flush makes every entry applied so far durable in the node's own
	// files (the broker's flush pass); raft compacts its log behind a
	// snapshot only after it returned nil.
	Flush() error
	// SnapshotFiles hands visit every file another node needs to start
	// from this node's state (rel: the path under the data directory,
	// '/'-separated; path: where to read it; size: the bytes to send),
	// consistent with the last flush pass; release is called once they
	// are sent (snapshot_install.go).
	SnapshotFiles(visit func(rel, path string, size int64)) (release func(), err error)
}

// Log is a commit log replicated by raft: the broker appends through it as
// it does through its local commit log (same method set, LSN semantics and
// ordering), and an entry's ticket completes once it is committed on a
// quorum and applied on this node. Only the leader appends. Safe for
// concurrent use.
type Log struct {
	cfg    Config
	origin uint64 // random per Log value: marks the entries it proposed
	logger hclog.Logger

	store *wal.WAL
	// stable is store as raft's StableStore, which drops writes once Close shut raft down
	// (stable.go).
	stable *stableStore
	// meta is raft-wal's meta and stable store, held here because
	// WAL.Close leaves it open (and its file lock held: a restart in the
	// same process would wait on it forever).
	meta  *metadb.BoltMetaDB
	snaps *raft.FileSnapshotStore
	trans raft.Transport // over peers, or Config.Transport
	// peers is the raft port: TLS and the handshake under raft's transport, and the
	// listener of forwarded HTTP requests (peer.go). nil with Config.Transport.
	peers *peerLayer
	// ident is this node's cluster id (clusterid.go).
	ident *identity
	r     *raft.Raft // nil until Start
	fsm   *fsm

	// mu orders Append: the LSN is assigned and the command enqueued to
	// raft's leader loop under it, so raft indexes follow LSN order.
	mu     sync.Mutex
	next   uint64 // the next LSN to assign; 0 = not ready to append (not the leader, or catching up)
	closed bool
	// ready mirrors next != 0 for Leading, which every HTTP request of a
	// replicated node asks (httpapi's forwarding) and must not queue
	// behind Append's mutex. Set under mu wherever next goes to or from 0
	// (Append's increments keep it non-zero).
	ready atomic.Bool

	// addrs is every node's announced HTTP address (announce.go).
	addrs httpAddrs
	// leaderNews is fired when raft names another leader or addrs changes
	// (LeaderChanged, leader_news.go); observer is raft's side of the first,
	// obsStop and obsDone end its goroutine.
	leaderNews news
	observer   *raft.Observer
	obsStop    chan struct{}
	obsDone    chan struct{}

	// last is the future of the newest entry Append proposed in this term
	// (nil before the first): ReadIndex waits on it (read_index.go).
	last atomic.Pointer[lastAppend]

	applied atomic.Uint64 // the highest LSN applied on this node (== committed: raft applies in order)
	first   atomic.Uint64 // what TruncateBefore last said the broker no longer needs
	err     atomic.Pointer[error]
	leaders atomic.Uint64 // times this node became the leader
	// since is when raft last told this node it leads (UnixNano; 0 = it
	// does not): the start of its fencing wait.
	since atomic.Int64
	// leaseTimeout is raft's LeaderLeaseTimeout in effect: how long a
	// deposed leader cut off from the quorum may still act as one.
	leaseTimeout time.Duration

	notify chan bool
	done   chan struct{}
	// stale is closed the first time this node's memory may differ from
	// the committed state (Stale).
	stale     chan struct{}
	staleOnce sync.Once
}

// Open creates raft's stores under cfg.Dir and binds cfg.RaftAddr; raft
// itself starts with Start, once the broker (the Applier) is open.
//
// Errors: a bad Config, or the stores' and the listener's.
func Open(cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: os.Stderr})
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("replica: origin id: %w", err)
	}
	l := &Log{cfg: cfg, origin: binary.BigEndian.Uint64(b[:]), logger: logger, stale: make(chan struct{})}
	walDir := filepath.Join(cfg.Dir, "wal")
	if err := os.MkdirAll(walDir, 0o755); err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	var err error
	l.meta = &metadb.BoltMetaDB{}
	segBytes := cfg.WALSegmentBytes
	if segBytes <= 0 {
		segBytes = wal.DefaultSegmentSize
	}
	if l.store, err = wal.Open(walDir, wal.WithLogger(logger.Named("wal")), wal.WithMetaStore(l.meta), wal.WithSegmentSize(segBytes)); err != nil {
		l.meta.Close()
		return nil, fmt.Errorf("replica: raft log store %s: %w", walDir, err)
	}
	if l.snaps, err = raft.NewFileSnapshotStoreWithLogger(filepath.Join(cfg.Dir, "snapshots"), snapshotsRetained, logger.Named("snapshots")); err != nil {
		l.store.Close()
		l.meta.Close()
		return nil, fmt.Errorf("replica: raft snapshot store: %w", err)
	}
	if l.ident, err = loadIdentity(cfg.Dir, cfg.Cluster, cfg.Join); err != nil {
		l.store.Close()
		l.meta.Close()
		return nil, err
	}
	if cfg.Transport != nil {
		// A test's transport: no raft port, no peer layer (nothing to forward over).
	} else if l.peers, err = listenPeers(cfg.RaftAddr, cfg.PeerTLS, cfg.NodeID, l.ident, logger.Named("peer")); err != nil {
		l.store.Close()
		l.meta.Close()
		return nil, fmt.Errorf("replica: raft transport on %s: %w", cfg.RaftAddr, err)
	}
	// MaxRPCsInFlight 1: no pipelined replication. raft 1.8.0's pipeline
	// can deadlock when a follower's answer ends its decoder (a higher term,
	// a refused append) while the send loop picks one more send: the send
	// parks on the pipeline's unbuffered channel, the decoder on its done
	// channel, and the deposed leader's Shutdown waits for them forever (a
	// SIGSTOPped leader in the fault harness never re-executed; grafana/pyroscope
	// #5518 found the same). raft's own docs give pipelining little benefit.
	if cfg.Transport != nil {
		l.trans = cfg.Transport
	} else {
		l.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: l.peers, MaxPool: 3, Timeout: 10 * time.Second, Logger: logger.Named("transport"), MaxRPCsInFlight: 1,
		})
	}
	l.applied.Store(max(cfg.StartLSN, 1) - 1)
	l.first.Store(max(cfg.StartLSN, 1))
	return l, nil
}

// Start starts raft with a as the follower side, bootstrapping the initial
// cluster when this node has no raft state yet.
func (l *Log) Start(a Applier) error {
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(l.cfg.NodeID)
	conf.Logger = l.logger
	conf.BatchApplyCh = true // a burst of appends is enqueued without waiting for the leader loop
	// raft's metrics reach /metrics/prometheus (httpapi/prometheus_raft.go): only the labelled
	// forms, not the legacy ones with a peer id in the metric's name.
	conf.NoLegacyTelemetry = true
	conf.HeartbeatTimeout = orDefault(l.cfg.HeartbeatTimeout, DefaultHeartbeatTimeout)
	conf.ElectionTimeout = orDefault(l.cfg.ElectionTimeout, DefaultElectionTimeout)
	conf.LeaderLeaseTimeout = min(orDefault(l.cfg.LeaderLeaseTimeout, DefaultLeaderLeaseTimeout), conf.HeartbeatTimeout)
	if l.cfg.TrailingLogs > 0 {
		conf.TrailingLogs = l.cfg.TrailingLogs
	}
	if l.cfg.SnapshotThreshold > 0 {
		conf.SnapshotThreshold = l.cfg.SnapshotThreshold
	}
	// A start restores no snapshot through the FSM: the data directory is
	// the state (PrepareDataDir installed a received one before the broker
	// opened it), and the store's Open of this node's own snapshot streams
	// that directory, which only a send should pay for. The newest marker's
	// LSN and addresses are read here instead.
	conf.NoSnapshotRestoreOnStart = true
	if err := l.readNewestMarker(); err != nil {
		return err
	}
	l.leaseTimeout = conf.LeaderLeaseTimeout
	l.notify = make(chan bool, 8)
	l.done = make(chan struct{})
	conf.NotifyCh = l.notify
	l.fsm = &fsm{l: l, a: a}
	has, err := raft.HasExistingState(l.store, l.store, l.snaps)
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	l.stable = &stableStore{StableStore: l.store}
	// Raft reads every entry it sends or applies back from its LogStore: the newest come from
	// memory (log_cache.go).
	r, err := raft.NewRaft(conf, l.fsm, newLogCache(l.store), l.stable, &snapshotStore{FileSnapshotStore: l.snaps, l: l}, l.trans)
	if err != nil {
		return fmt.Errorf("replica: start raft: %w", err)
	}
	l.r = r
	obs := make(chan raft.Observation, 1)
	l.observer = raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	l.obsStop, l.obsDone = make(chan struct{}), make(chan struct{})
	r.RegisterObserver(l.observer)
	go l.watchLeaderChanges(obs, l.obsStop, l.obsDone)
	if !has && !l.cfg.Join {
		var servers []raft.Server
		for _, p := range l.cfg.Cluster {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
		}
		// Every member bootstraps the same configuration (raft allows it);
		// ErrCantBootstrap only says another start did it already.
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("replica: bootstrap: %w", err)
		}
	}
	go l.watchLeadership()
	return nil
}

// watchLeadership opens appends when this node becomes the leader and has
// applied everything committed before its term (a barrier), so the LSNs it
// assigns continue the log; it closes them the moment leadership is lost.
func (l *Log) watchLeadership() {
	defer close(l.done)
	for isLeader := range l.notify {
		if !isLeader {
			// Before l.mu: an Append may hold it while raft's loop, which
			// would unblock it, waits on an FSM apply that waits for the
			// broker to learn it is stale.
			if l.ready.Load() {
				l.markStale()
			}
			l.mu.Lock()
			if l.next != 0 {
				// Closed before Leading says false: whoever sees the node
				// not leading sees it stale if it led.
				l.markStale()
			}
			l.next = 0
			l.since.Store(0)
			l.ready.Store(false)
			l.mu.Unlock()
			continue
		}
		// The fence counts from here, before the barrier: the old leader
		// lost the quorum before this node could win it.
		elected := time.Now().UnixNano()
		if err := l.r.Barrier(0).Error(); err != nil {
			continue // lost it again (or shut down): a later notification says so
		}
		l.mu.Lock()
		if l.r.State() == raft.Leader && !l.closed {
			l.last.Store(nil) // every entry of an earlier term is applied (the barrier)
			l.next = l.applied.Load() + 1
			l.since.Store(elected)
			l.leaders.Add(1)
		}
		l.ready.Store(l.next != 0)
		ready := l.next != 0
		announce := ready && l.cfg.HTTPAddr != ""
		l.mu.Unlock()
		if announce {
			l.announce()
		}
		if ready {
			l.proposeClusterID()
		}
	}
}

// proposeClusterID proposes a new cluster id when this ready leader has none: the first
// leader of a new cluster (or of one made before cluster ids existed). Every node applies it
// (fsm.Apply) and keeps it; a node that missed it takes it from the first member it
// connects to (peer.go). Not waited for: a leader that loses its term before the entry
// commits leaves it to the next one, which finds no id after its barrier either.
func (l *Log) proposeClusterID() {
	if l.ident.get().id != "" {
		return
	}
	id, err := newClusterID()
	if err != nil {
		l.logger.Error("cannot make a cluster id", "error", err)
		return
	}
	l.r.Apply(encodeClusterID(clusterIDCommand{id: id, hash: l.ident.boot}), 0)
}

// announce proposes this node's HTTP address, so every node can forward to
// it. Not waited for: a leader that loses its term before the entry commits
// leaves the announcing to the next one, and a node that learns of this
// leader before the entry reaches it answers 503 meanwhile (forwarding has
// nowhere to go).
func (l *Log) announce() {
	l.r.Apply(encodeAnnounce(announcement{node: l.cfg.NodeID, httpAddr: l.cfg.HTTPAddr}), 0)
}

// Append proposes one entry and returns its ticket (package lsn's): its LSN
// and a Wait that returns nil once the entry is committed on a quorum and
// applied here. The payload is copied.
//
// Errors: ErrNotLeader (nothing proposed), ErrClosed, or the sticky error
// of Err. A Wait's error is a *CommitError carrying raft's: ErrLeadershipLost
// leaves the entry's fate unknown (it may still commit under the next
// leader).
func (l *Log) Append(kind byte, payload []byte) (lsn.Ticket, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return lsn.Ticket{}, ErrClosed
	case l.Err() != nil:
		return lsn.Ticket{}, l.Err()
	case l.next == 0:
		return lsn.Ticket{}, ErrNotLeader
	}
	n := l.next
	f := l.r.Apply(encodeEntry(entry{lsn: n, origin: l.origin, kind: kind, payload: payload}), 0)
	l.last.Store(&lastAppend{lsn: n, f: f})
	l.next++
	wait := func() error {
		if err := f.Error(); err != nil {
			return &CommitError{LSN: n, Err: err}
		}
		return nil
	}
	return lsn.NewTicket(lsn.LSN(n), lsn.WaitFunc(wait)), nil
}

// NumberFrom raises the LSN this node counts as applied to start-1 (the
// broker's snapshots cover everything below start), before Start.
func (l *Log) NumberFrom(start uint64) {
	if start > 0 && start-1 > l.applied.Load() {
		l.applied.Store(start - 1)
	}
	if start > l.first.Load() {
		l.first.Store(start)
	}
}

// Read visits nothing: a replicated node's past is what its data directory
// holds plus what raft applies again after a start (every committed entry
// after raft's last snapshot goes through Apply, and the broker's replay is
// idempotent), so there is no local tail for the broker's start-up to read.
func (l *Log) Read(from uint64, fn func(lsn uint64, kind byte, payload []byte) error) error {
	return nil
}

// DurableLSN is the highest LSN committed and applied on this node.
func (l *Log) DurableLSN() uint64 { return l.applied.Load() }

// FirstLSN is the broker's last truncation point.
func (l *Log) FirstLSN() uint64 { return l.first.Load() }

// TruncateBefore notes that the broker's files hold every entry below lsn.
// Raft compacts its own log at its snapshots instead, after the broker's
// Flush (which waits for transactions in flight up to the applied LSN).
func (l *Log) TruncateBefore(lsn uint64) error {
	for {
		cur := l.first.Load()
		if lsn <= cur || l.first.CompareAndSwap(cur, lsn) {
			return nil
		}
	}
}

// RetainedBytes is 0: raft bounds its own log (TrailingLogs), so the
// broker's flush pass runs on its interval only.
func (l *Log) RetainedBytes() int64 { return 0 }

// Err is nil unless this node can no longer follow the log (ErrDiverged).
// Not being the leader is not an error here: Append says it.
func (l *Log) Err() error {
	if p := l.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Close shuts raft down (a leader steps down without handing over: the
// others elect a new one after their election timeout) and closes the
// stores and the listener.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed, l.next = true, 0
	l.ready.Store(false)
	l.since.Store(0)
	l.mu.Unlock()
	var errs []error
	if l.r != nil {
		errs = append(errs, l.r.Shutdown().Error())
		close(l.notify) // raft writes to it no more after Shutdown
		<-l.done
		l.r.DeregisterObserver(l.observer)
		close(l.obsStop)
		<-l.obsDone
		l.stable.close() // a heartbeat's term may still arrive (stable.go)
	}
	if c, ok := l.trans.(raft.WithClose); ok {
		errs = append(errs, c.Close())
	}
	errs = append(errs, l.store.Close(), l.meta.Close())
	return errors.Join(errs...)
}

// Role is "leader" when this node appends (the leader, caught up) and
// "follower" otherwise, elections included (/health's role).
func (l *Log) Role() string {
	if l.Leading() {
		return "leader"
	}
	return "follower"
}

// Leader is the current leader's id and raft address ("" when none is
// known).
func (l *Log) Leader() (id, addr string) {
	if l.r == nil {
		return "", ""
	}
	a, i := l.r.LeaderWithID()
	return string(i), string(a)
}

// Leading reports whether this node appends: the leader, caught up. It
// takes no lock (Append may hold one for a while under load): an answer is
// stale as soon as it is given either way.
func (l *Log) Leading() bool { return l.ready.Load() }

// LeaderHTTP is the current leader's node id and the HTTP address it
// announced (announce.go); addr is "" while no leader is known or the known
// one's announcement has not reached this node.
func (l *Log) LeaderHTTP() (id, addr string) {
	if l.r == nil {
		return "", ""
	}
	_, i := l.r.LeaderWithID()
	if i == "" {
		return "", ""
	}
	return string(i), l.addrs.get(string(i))
}

// NodeID is this node's --node-id.
func (l *Log) NodeID() string { return l.cfg.NodeID }

// Snapshot takes a raft snapshot now (the broker's flush pass, then the
// marker) and lets raft compact its log behind it, keeping TrailingLogs.
func (l *Log) Snapshot() error {
	if l.r == nil {
		return errors.New("replica: Snapshot before Start")
	}
	return l.r.Snapshot().Error()
}

// LeaderSince is when this node was elected, for the fencing wait (zero
// when it does not lead).
func (l *Log) LeaderSince() time.Time {
	if n := l.since.Load(); n != 0 && l.Leading() {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// LeaderLeaseTimeout is raft's LeaderLeaseTimeout in effect: a leader that
// hears from no quorum for this long steps down, so a deposed leader acts as
// one for at most this long after the others stopped hearing it.
func (l *Log) LeaderLeaseTimeout() time.Duration { return l.leaseTimeout }

// HandOver transfers the leadership to another voter and waits until one
// took it (raft's LeadershipTransfer), so a graceful stop of the leader costs
// the cluster an election round trip, not an election timeout. A node that
// does not lead does nothing.
//
// Errors: raft's (no other voter, the transfer timed out); the caller then
// closes anyway and the others elect a leader after their timeout.
func (l *Log) HandOver() error {
	if l.r == nil || !l.Leading() {
		return nil
	}
	if err := l.r.LeadershipTransfer().Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			// Leading lags raft: the notification that this node lost its
			// leadership (a transfer just done, an election) is not handled yet.
			return nil
		}
		return fmt.Errorf("replica: leadership transfer: %w", err)
	}
	return nil
}

// Stale is closed once this node's memory may differ from the committed
// state, and the process must restart to recover it from its files and
// raft's log: it lost its leadership after it could append (entries it
// proposed may not commit while its handlers applied their effects in
// memory), or it received another node's snapshot (snapshot_install.go),
// which a start installs. The broker freezes and comb serve re-executes
// itself (docs/replication.md, "A deposed leader"). Close does not close it.
func (l *Log) Stale() <-chan struct{} { return l.stale }

// LeaderTerms is how many times this node became a ready leader.
func (l *Log) LeaderTerms() uint64 { return l.leaders.Load() }

// snapshotsRetained is how many snapshots raft's store keeps.
const snapshotsRetained = 2

// readNewestMarker takes the applied LSN and the nodes' HTTP addresses from
// the newest snapshot's marker, as a restore would have.
func (l *Log) readNewestMarker() error {
	list, err := l.snaps.List()
	if err != nil || len(list) == 0 {
		return err
	}
	_, rc, err := l.snaps.Open(list[0].ID)
	if err != nil {
		return fmt.Errorf("replica: snapshot %s: %w", list[0].ID, err)
	}
	defer rc.Close()
	m, err := readMarker(rc)
	if err != nil {
		return fmt.Errorf("replica: snapshot %s: %w", list[0].ID, err)
	}
	if m.lsn > l.applied.Load() {
		l.applied.Store(m.lsn)
	}
	l.addrs.replace(m.addrs)
	return nil
}

// markStale closes Stale (once).
func (l *Log) markStale() { l.staleOnce.Do(func() { close(l.stale) }) }

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
