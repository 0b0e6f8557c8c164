package broker

import (
	"time"

	"github.com/combmq/comb/clock"
	"github.com/combmq/comb/seal"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"

	"github.com/rs/zerolog"
)

// Config configures a Broker. Zero values mean the documented defaults.
type Config struct {
	DataDir            string        // created if missing
	Sync               string        // "always" (default), "interval", "never"
	SyncInterval       time.Duration // for Sync "interval"; default 10 ms
	CheckpointInterval time.Duration // cursor checkpoint period (commit-log entries); default 5 ms
	MaxSegmentFileSize int64         // bytes; default 64 MiB
	MaxBatch           int           // pop batch cap; default 10000
	Logger             zerolog.Logger

	// Clock is the broker's clock: its readings (lease expiry, timestamps)
	// and the long-poll's deadlines and timers (read_longpoll.go); nil means
	// clock.System, or Now's readings when Now is set. Tests pass a
	// clocktest.Fake to drive a parked pop's waits by hand.
	Clock clock.Clock
	// Now, when Clock is nil, fixes the broker's readings only: tests set it
	// to expire leases without sleeping, while a long-poll still waits on
	// the system clock (a frozen reading would never reach its deadline).
	Now func() time.Time
	// WakeTick is the period on which push wake-ups of parked long-polls are
	// coalesced (seed 000 "Long-poll"); default 5 ms.
	WakeTick time.Duration

	// MaxOpenFiles bounds the segment and index file handles held by all
	// partition logs together (segment.HandleCache); default 512, < 0 = no bound.
	MaxOpenFiles int
	// IdleEvict is how long a partition stays unused before its log leaves
	// memory (seed 004: 10 minutes); default 10 min, < 0 = never.
	IdleEvict time.Duration
	// MaintenanceInterval is the period of the background task that evicts
	// idle partitions and applies retention (maint_evict.go, maint_retention.go);
	// default 1 s, < 0 = no background task (tests drive it by hand).
	MaintenanceInterval time.Duration
	// MaintenanceBatch is how many partitions one maintenance tick visits
	// (round robin), bounding its cost; default 10,000.
	MaintenanceBatch int
	// RetentionInterval is how often a maintenance cycle applies the
	// retentionSeconds and completedRetentionSeconds rules (Queen's
	// RETENTION_INTERVAL); EvictionInterval the same for maxWaitTimeSeconds
	// (Queen's EVICTION_INTERVAL). Both default to 1 s, the pace comb's
	// retention always had (Queen's are 5 min and 1 min: a cycle here is
	// bounded by MaintenanceBatch and never scans a partition, so there is
	// no reason to wait longer). They set when files are reclaimed and the
	// counts catch up, not what a pop sees: a pop never delivers an expired
	// message (read_expire.go). The maintenance tick runs at least this
	// often.
	RetentionInterval time.Duration
	EvictionInterval  time.Duration
	// MaxSegmentFileAge rotates a partition's active file once it spans this
	// long, so retention (by whole sealed file) can reach recent data;
	// default 0 = rotate by size only.
	MaxSegmentFileAge time.Duration
	// FS is the file system under every journal and log (metadata, cursor,
	// segments); nil means vfs.OS. Tests pass vfs.Mem or errorfs.FS.
	FS vfs.FS
	// FlushInterval is the longest the commit log goes without a flush pass
	// (flush.go: partition files synced, snapshots written, the log
	// truncated); default 10 s. FlushBytes starts one sooner once the log has
	// grown this much; default 256 MiB.
	FlushInterval time.Duration
	FlushBytes    int64
	// FlushSyncFS lets a flush pass make many files durable with one
	// syncfs(2) per pass (from 8 dirty logs, new directories or stream
	// snapshots on) instead of an fdatasync or fsync of each through its
	// own descriptor (the default). Open refuses it unless the data
	// directory is on ext4, xfs or btrfs on Linux 5.8 or later
	// (vfs.SyncFSTrusted): elsewhere syncfs may return 0 having synced
	// nothing (issue 21; docs/operations.md, "File systems").
	FlushSyncFS bool
	// SmallPartitions makes a new partition start without a directory or
	// files of its own (issue 23, broker/small.go): its records are served
	// from memory and homed by the flush pass in the shared entry log
	// (<data>/small, package entrylog), until it holds SmallPartitionBytes:
	// the flush pass then gives it its own directory and files. A data
	// directory holding <data>/small is read whether it is set or not. Not
	// with Replicated (Open refuses both).
	SmallPartitions bool
	// SmallPartitionBytes is the size past which a small partition gets its
	// own directory (default DefaultSmallPartitionBytes; broker/small.go says
	// why the number).
	SmallPartitionBytes int64
	// GroupCommitWait is the longest the commit log's committer waits for
	// more callers before it writes and syncs a batch (Sync "always" only;
	// commitlog.Options.GroupCommitWait: only when at least two callers were
	// seen waiting at once and they come often enough for the wait to gather
	// four more, and only until as many wait); default
	// DefaultGroupCommitWait (docs/benchmarks.md, "Group-commit wait"),
	// < 0 = never waits.
	GroupCommitWait time.Duration
	// CommitLogFileBytes is the most one commit-log file grows to; default
	// 64 MiB (commitlog.DefaultFileBytes). Tests make it small.
	CommitLogFileBytes int64
	// Keys seal the payloads of queues with encryptionEnabled and open sealed
	// payloads on every read (spec 9.2; atrest.go). nil: no key, such queues
	// store plaintext (warned) and sealed payloads cannot be read.
	Keys *seal.Keyring
	// NoAnalytics turns the per-minute series off (maint_series.go): no
	// counting on the push, pop and ack paths, empty dashboard series. For
	// measuring what the counting costs (comb serve --analytics=false).
	NoAnalytics bool
	// Replicated, when set, replaces the local commit log (issue 15,
	// docs/replication.md): entries are committed through it (package
	// replica) and the broker applies the entries other nodes proposed
	// (ApplyReplicated). nil: the single-node commit log, nothing else
	// changes.
	Replicated ReplicatedLog
}

// Defaults applied by Open.
const (
	DefaultSyncInterval        = 10 * time.Millisecond
	DefaultCheckpointInterval  = 5 * time.Millisecond
	DefaultGroupCommitWait     = 5 * time.Millisecond
	DefaultMaxBatch            = 10000
	DefaultWakeTick            = 5 * time.Millisecond
	DefaultIdleEvict           = 10 * time.Minute
	DefaultMaintenanceInterval = time.Second
	DefaultMaintenanceBatch    = 10000
	DefaultRetentionInterval   = time.Second
	DefaultEvictionInterval    = time.Second
)

func (c Config) withDefaults() Config {
	if c.Sync == "" {
		c.Sync = "always"
	}
	if c.SyncInterval <= 0 {
		c.SyncInterval = DefaultSyncInterval
	}
	if c.CheckpointInterval <= 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.Clock != nil {
		c.Now = c.Clock.Now
	} else if c.Now == nil {
		c.Now = time.Now
	}
	if c.WakeTick <= 0 {
		c.WakeTick = DefaultWakeTick
	}
	if c.GroupCommitWait == 0 {
		c.GroupCommitWait = DefaultGroupCommitWait
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.FlushBytes <= 0 {
		c.FlushBytes = DefaultFlushBytes
	}
	if c.MaxOpenFiles == 0 {
		c.MaxOpenFiles = segment.DefaultMaxHandles
	}
	if c.IdleEvict == 0 {
		c.IdleEvict = DefaultIdleEvict
	}
	if c.MaintenanceInterval == 0 {
		c.MaintenanceInterval = DefaultMaintenanceInterval
	}
	if c.MaintenanceBatch <= 0 {
		c.MaintenanceBatch = DefaultMaintenanceBatch
	}
	if c.RetentionInterval <= 0 {
		c.RetentionInterval = DefaultRetentionInterval
	}
	if c.EvictionInterval <= 0 {
		c.EvictionInterval = DefaultEvictionInterval
	}
	return c
}
