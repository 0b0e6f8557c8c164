// Package broker is the engine behind the Queen v1 API: it ties the commit log
// (package commitlog), the segment logs (package segment), the cursor engine
// (package cursor) and the lease and ack rules (package lease) together. It
// owns the queue registry and options, push routing and deduplication, pop
// candidate selection (oldest ready partition first), long-poll, ack
// resolution with the DLQ, transactions, seeks, group and queue deletion, and
// recovery after a crash.
//
// It must not know about HTTP: httpapi parses requests into the types of
// api.go and encodes the results; every rule of spec sections 1-8 and seed 000
// lives here or below. Two subpackages know nothing of the broker: wake holds
// the long-poll wake gates, ready the ready sets pops take candidates from.
//
// # Where a request is served
//
//	push         Broker.Push (write_push.go): groupPush → ensurePartitions, createPartitionsLocked
//	             (write_create.go) for new queues and partitions → appendGroup: dedup (findStored,
//	             write_durable.go), appendLogged (segment file + commit-log entry, write_wal.go),
//	             exposeLocked (the claimable mark, write_early.go) → announce: ready sets,
//	             wake.Waker.Signal → waitGroups (own entries and what duplicates name) →
//	             raiseVisible, or (nothing exposed: push maintenance) publishOrHold → publish
//	pop          Broker.Pop (read_pop.go): newPopCtx → popOnce → popWildcard / popTargeted /
//	             popDiscovery → claimFrom takes candidates from the ready set (groupReady.Take,
//	             package ready) → claim (read_claim.go): readSpanLocked, takeSpanLocked, addClaimed
//	             (past the visible mark: noteEarlyLocked) → cursor.Engine.Wait → waitEarly
//	             (write_early.go); a group's first contact: groupReadyFor, seedCursorLocked
//	             (read_seed.go); a failed checkpoint: undoCursorChanges (undo.go)
//	long-poll    Broker.longPoll (read_longpoll.go): arms the queue's wake.Gate (popGate), popOnce,
//	             parks (parkTime, parkOn) until a push's announce signals the gate, a backoff re-check
//	             (wake.Backoff), a held-back message's due time or the timeout; stillWanted
//	             (read_alive.go) stops a pop whose client left
//	ack          Broker.Ack (ack.go): groupAcks → ackPartition: resolveOffsetsLocked, lease.ApplyAcks,
//	             writeDLQLocked (ack_dlq.go) → cursor.Engine.Wait → leaseReleased (read_ready.go)
//	lease, seek  Broker.ExtendLease (ack_lease.go); Seek, SeekPartition, DeleteGroup,
//	             SetSubscriptionTimestamp (ack_cursors.go)
//	transaction  Broker.Transaction (tx.go): sortOps → txTargets → txCheckLocked → txStagePushes,
//	             txStageAcks → txCommit (the commit point: its Tx entry, walentry.TxRecord) →
//	             applyRedoAppends (tx_apply.go) → txFinish
//	streams      Broker.StreamRegister, StreamState (stream.go); Broker.StreamCycle (stream_cycle.go):
//	             checkCycle → cycleResolve → cyclePrecheck (stream_ack.go) → txTargets → cycleStageState,
//	             txStagePushes, cycleStageAck → txCommit (applyStreamChanges, stream_store.go)
//	recovery     Open (open.go) → open: openMeta (meta_journal.go), cursor.Open, openCommitLog,
//	             takeCleanMarker (open_startup.go), scanCommitLog, applyMeta → openPartition
//	             (open_partitions.go) → replayCommitLog (open.go) → recover, replayTx
//	             (open_recover.go) → flushPass
//	flush        startFlusher, flushPass (flush.go): syncs the materialized files, writes the
//	             summaries (flush_summaries.go) and snapshots, truncates the commit log
//	metadata     Configure, DeleteQueue (meta_queue.go); logMetaLocked (meta_journal.go);
//	             checkStrayDirs at start-up (open_partitions.go); SetPushMaintenance,
//	             SetPopMaintenance (meta_maint.go)
//	messages     the list and detail are package report's (report/messages.go, message.go), read
//	             through View.FindMessage (findMessage, note_messages.go: the dedup index);
//	             DeleteMessage (note_messages.go): a tombstone in the notes store; claims skip
//	             deleted messages (read_deleted.go)
//	traces       AddTrace, Traces, TracesByName, TraceNames (note_traces.go); a delete or a trace
//	             event is a Note entry of the commit log (logNote, note_store.go), then package notes
//	reports      package report (consumer groups, resources, DLQ listing, status, series, storage,
//	             /metrics) reads the broker only through View (view.go, view_queue.go): data
//	             snapshots and the handles QueueView, PartitionView and DLQLog, whose methods take
//	             the locks; Counters (view_counters.go) is Stats without the lag. Health stays
//	             here: Damaged (damage.go), Healthy, CheckpointFailure (health.go). The series are
//	             counted in Push, addClaimed (read_claim.go), countAcks (ack_series.go) and countTx
//	             (tx_series.go), saved by maint_series.go; syncs are timed in write_synchist.go
//	maintenance  maintain (maint_evict.go): idle eviction, expirePartition,
//	             retainPartition (maint_retention.go), on RetentionInterval / EvictionInterval
//	expiry       a claim skips messages past retentionSeconds / maxWaitTimeSeconds
//	             (readLiveSpanLocked, read_expire.go); readers start at partition.liveFrom
//	shutdown     Close, closeFiles (close.go)
//	following    ApplyReplicated (follow_apply.go), on a node with Config.Replicated that does
//	             not lead: replayEntry (open.go) per committed entry, applyReplicatedMeta for
//	             Meta records (issue 15, docs/replication.md); committed offsets and the
//	             stale node (follow_commit.go); the fence and a new leader's rebuild
//	             (follow_fence.go); the files a snapshot sends (follow_snapshot.go)
//
// # Files: one prefix per path the data travels
//
//	write_   a push: partition creation, appends, the commit-log seam (write_wal.go), the rule
//	         that a duplicate waits for what it names (write_durable.go)
//	read_    a pop: candidate selection (the ready set), claims, first contact, long-poll
//	ack_     (and ack.go) what moves a group's cursor after a pop: acks, the DLQ they write, lease
//	         extension, seeks and group deletion
//	tx_      (and tx.go) transactions: staging, the commit point, the entry's format, applying it
//	meta_    queues and partitions: configure, delete, the metadata journal, maintenance modes
//	view     the read-only View package report computes the admin routes and /metrics from
//	open_    start-up and recovery (with open.go); close.go is the way back
//	flush_   the background flush pass (with flush.go)
//	maint_   the maintenance task: idle eviction and retention
//	note_    message deletions and trace events: the notes store (package notes) and its pruning
//	stream_  (and stream.go) stream queries (spec 10): registration, the cycle (a transaction
//	         whose Tx entry carries the state ops), its ack rule, the state store's place in the
//	         flush pass and recovery (package streams holds the rows and files)
//	follow_  a node of a replicated cluster: committed entries from the leader, the new
//	         leader's fencing wait (follow_fence.go; write_replica.go is the seam's adapter,
//	         enterWrite in broker.go refuses writes on a node that does not lead)
//
// Files without a prefix are shared by several paths: broker.go (the Broker,
// queue and partition types and the registry), api.go, config.go, names.go,
// atrest.go, damage.go, health.go, pending.go (per-queue counters every cursor
// change updates) and undo.go (putting back states whose checkpoint failed).
// The commit-log payload codecs (transaction redo records, dead letters'
// metadata) are in package walentry. No function here is longer than ~80 lines: a long path is a list
// of named steps, each with a doc comment that says why.
//
// # Data directory
//
//	<data>/LOCK                      flock'd while a broker has the directory open
//	<data>/commitlog/                the commit log: everything durable goes through it first
//	<data>/meta/journal              snapshot of the registry with the LSN it covers (package meta)
//	<data>/meta/clean                clean-shutdown marker: per-partition offsets + file stamps (open_startup.go); renamed to summaries by Open
//	<data>/meta/summaries            summary checkpoint, same format, rewritten by every flush pass (flush_summaries.go)
//	<data>/meta/maintenance          push/pop maintenance modes and held partitions' published marks (meta_maint.go)
//	<data>/meta/analytics            the per-minute series of the dashboard (package analytics; maint_series.go)
//	<data>/cursor/                   cursor.Engine snapshots; its checkpoints are commit-log entries
//	<data>/partitions/<partitionId>/ one segment.Log per partition (UUIDv7 directory name) + DESCRIPTOR
//	<data>/dlq/<queueId>/            one segment.Log per queue of dead-lettered messages + DESCRIPTOR
//	<data>/notes/log                 message tombstones and trace events (package notes; note_store.go)
//	<data>/streams/                  stream query registry and per-(query, partition) state snapshots (package streams; stream_store.go)
//	<data>/quarantine/               what comb fsck --repair moved aside, and cut journal tails
//
// Queue and partition names never become paths.
//
// # Scale (issue 7)
//
// Partition logs share a segment.HandleCache (Config.MaxOpenFiles) so open
// files stay bounded whatever the number of partitions; a maintenance task
// (maint_evict.go) releases logs unused for Config.IdleEvict (seed 004) and
// applies retention (maint_retention.go); after a clean Close, Open reads the
// marker instead of the logs (open_startup.go), and after a crash the last
// summary checkpoint (flush_summaries.go): either way a partition's summary
// is used only while its directory and newest file still carry the stamp (two
// stats) taken with it, else its log is opened and its tail verified. A new
// partition is a mkdir (write_create.go), its files come with its first
// append. maxSize reads a per-queue pending counter (pending.go).
//
// # Metadata
//
// Queues, partitions and queue deletions are commit-log entries (package meta
// records), durable before a change is acknowledged, and snapshotted into the
// metadata journal by the flush pass; every partition and DLQ directory
// carries a meta.Descriptor. Open applies them (meta_journal.go) and the
// start-up rule: directories of deleted queues and directories without
// records that the metadata does not name are removed; any other such
// directory makes Open fail with ErrStrayData (comb fsck --repair rebuilds the
// journal from descriptors).
//
// # Locks
//
// Every mutex of the broker and its subpackages, outermost first: a goroutine
// holding one takes only locks listed after it, and a leaf takes none. Each
// line gives the lock, in parentheses the spellings a …Locked function's doc
// uses to say its caller holds it (locks_test.go checks both lists), and
// what it guards.
//
//	flushState.mu (b.flush.mu)            one flush pass at a time (flush.go), and the files a
//	                                      snapshot sends (follow_snapshot.go); held across the
//	                                      pass's syncs and its bounded waits for the commit log's
//	                                      batch in flight (flushYield), which take no lock here
//	streamState.regMu (regMu)             stream registrations (exclusive) against cycles and the
//	                                      flush pass's registry file (shared; stream_store.go)
//	Broker.readyMu (readyMu)              one pop rebuilds the ready sets for a new leader term
//	                                      (follow_fence.go)
//	maintenance.mu (b.maint.mu, m.mu)     one maintenance tick at a time: its partition list, rules
//	                                      and partition.idleSince (maint_evict.go)
//	Broker.metaMu (metaMu)                metadata changes: entries appended and applied in the order
//	                                      they take effect, the state a metadata snapshot copies
//	                                      (written after it is let go), tombstones; held across the
//	                                      changes' commit-log waits
//	Broker.createMu (createMu)            the batch of partition creations the next holder of metaMu
//	                                      makes (write_create.go); taken alone or inside metaMu
//	maintMode.mu (b.mm.mu)                the push and pop maintenance modes and the held partitions;
//	                                      shared by every publish; never taken with a partition lock
//	                                      held (meta_maint.go)
//	Broker.mu (b.mu)                      the registry: the queue and partition maps; never held
//	                                      across a sync
//	queue.mu (q.mu)                       a queue's partition map and list, and its ready sets
//	                                      (queue.groups)
//	partition.mu (p.mu)                   appends and every read-modify-write of a (partition, group)
//	                                      State; several in id order for a transaction
//	queue.dlqMu (q.dlqMu)                 a queue's DLQ log, its committed mark and per-partition
//	                                      counts (ack_dlq.go)
//	ready.Set.mu (s.mu)                   leaf: one (queue, group)'s ready set (package ready)
//	partition.pendMu (p.pendMu)           leaf: the partition's share of the queue's pending depth
//	                                      (pending.go)
//	queue.namesMu (q.namesMu)             leaf: writers of the queue's copy-on-write group names
//	                                      (pending.go)
//	flushState.stateMu (b.flush.stateMu)  leaf but for the commit log's Append (appendInflight): new
//	                                      directories, in-flight transactions, the last pass's
//	                                      figures (flush.go)
//	cpuSaturation.mu (b.cpuSat.mu)        leaf, only tried: one goroutine reads the scheduler metrics
//	                                      (saturation.go)
//	Broker.gate (b.gate)                  leaf: enter's closed check and Add against Close
//	                                      (broker.go)
//	wake.Waker.mu (Waker.mu, w.mu)        leaf: the gates waiting for the next tick (package wake)
//	wake.Gate.mu (g.mu)                   leaf: a gate's channel, replaced at each fire (package
//	                                      wake)
//
// The partition lock is never held while taking the registry or a queue
// lock: a push publishes and a transaction tells the ready sets about
// released leases after letting go of its partition locks. There is no
// global lock on the push, pop or ack paths. Parked long-polls hold no lock.
//
// # Durability
//
// Push answers after its commit-log entries are durable; only then are the
// messages visible (partition.visible). Pops may claim them earlier, once
// the entries are appended (partition.claimable), but answer only after the
// partition's tail as read with the claim is durable, and claim nothing when
// it fails (write_early.go). An item answered
// `duplicate` waits for the record it names to be durable: every dedup
// lookup (push, transaction, a stream cycle's sink push) is findStored
// (write_durable.go), which hands back the partition's tail ticket when a
// hit is not yet published. Pop, ack, extend and seek
// answer after cursor.Engine.Wait, i.e. after the checkpoint holding their
// change is durable. DLQ entries are durable before the cursor passes their
// message. A transaction's commit point is its durable Tx entry (see
// Transaction and docs/architecture.md).
//
// When that checkpoint fails (a full disk: issue 10, "a state, not an error")
// the request answers 5xx and puts back the states it changed, unless someone
// changed them since (undo.go): a pop releases its claims, so no lease
// outlives the error and the group is served again as soon as checkpoints
// succeed; an ack (except one that dead-lettered: its DLQ copies are durable
// already), an extend and a seek are undone; a transaction's entry is not
// applied. CheckpointFailure reports the state for GET /health.
//
// # Encryption at rest
//
// atrest.go (spec 9.2, issue 11): a payload pushed to a queue with
// encryptionEnabled is sealed with Config.Keys (package seal) before it goes
// into a commit-log entry or a segment, so no file holds it in clear; pop and
// the DLQ listing open it again, and a payload no configured key opens is
// handed out as Message.PayloadError, never as ciphertext.
package broker
