package broker

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/combmq/comb/streams"
	"github.com/combmq/comb/walentry"
)

// walStream is the commit-log entry of a stream query's registration or
// reset (walentry.Stream, payload streams.EncodeEntry).
const walStream = walentry.Stream

// streamState is the broker's half of the streams state store (package
// streams holds the rows and the files): how it rides the commit log.
//
//   - A registration is a walStream entry, appended and applied under regMu
//     (exclusive), durable before the answer; the flush pass writes the
//     registry file holding regMu shared, so the file covers every entry up
//     to the LSN it names.
//   - A cycle's state ops travel in its transaction's Tx entry (walentry.TxRecord
//     version 2) and reach the store with that entry's LSN right after the
//     commit point (txCommit), before the entry leaves the in-flight set.
//   - The flush pass writes the dirty shards' snapshots and keeps the log
//     from being truncated past the oldest change no snapshot holds.
//   - Open loads the files, drops stale shards, and replays walStream and Tx
//     entries in LSN order; the store skips what a file already holds.
type streamState struct {
	store  *streams.Store
	files  *streams.Files
	loaded streams.Loaded // during Open only
	// regMu serialises registrations with cycles, which hold it shared from
	// their query lookup to their apply: a reset's wipe then never meets a
	// shard that holds changes from both sides of it. The flush pass holds
	// it shared too while it writes the registry file: only registrations
	// change the registry.
	regMu sync.RWMutex

	cycles, failed atomic.Uint64
}

// loadStreams reads <data>/streams (before the commit log opens: its LSNs
// number a lost log on). Damage makes Open fail: a snapshot is the only copy
// of the state once the log was truncated behind it (comb fsck reports it).
func (b *Broker) loadStreams() error {
	b.streams.store = streams.NewStore()
	b.streams.files = &streams.Files{FS: b.fs, Root: filepath.Join(b.dir, streams.Dir), NoSync: b.noSync(), SyncFS: b.cfg.FlushSyncFS}
	l, err := b.streams.files.Load()
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.streams.loaded = l
	// Writes a crash cut; the files they were to replace are intact.
	return b.streams.files.RemovePaths(l.Leftovers)
}

// restoreStreams fills the store once the registry of partitions is known:
// shards of deleted partitions and shards older than their query's reset are
// left out and their files removed.
func (b *Broker) restoreStreams() error {
	stale := b.streams.store.Restore(b.streams.loaded, func(id [16]byte) bool { return b.parts[id] != nil })
	if len(stale) > 0 {
		b.log.Info().Int("files", len(stale)).Msg("start-up: removed stream state of reset queries and deleted partitions")
	}
	return b.streams.files.RemovePaths(stale)
}

// replayStreamEntry applies a walStream entry found by the start-up replay
// that the registry file does not cover.
func (b *Broker) replayStreamEntry(lsn uint64, payload []byte) error {
	if lsn <= b.streams.loaded.Registry.Covers {
		return nil
	}
	q, reset, err := streams.DecodeEntry(payload)
	if err != nil {
		return fmt.Errorf("commit log entry %d: %w", lsn, err)
	}
	dropped := b.streams.store.ApplyQuery(lsn, q, reset)
	return b.streams.files.RemoveShards(dropped)
}

// applyStreamChanges applies a committed entry's state ops to the store,
// right after the commit point (the cycle holds its source partition's lock,
// which is not deleted).
func (b *Broker) applyStreamChanges(lsn uint64, rec *walentry.TxRecord) {
	for i := range rec.Streams {
		b.streams.store.ApplyChange(lsn, &rec.Streams[i])
	}
}

// replayStreamChanges is applyStreamChanges for the start-up replay: changes
// of partitions deleted since are skipped, and the store skips what a
// snapshot already holds (by LSN).
func (b *Broker) replayStreamChanges(lsn uint64, rec *walentry.TxRecord) {
	for i := range rec.Streams {
		if b.parts[rec.Streams[i].Partition] != nil {
			b.streams.store.ApplyChange(lsn, &rec.Streams[i])
		}
	}
}

// flushStreams is the flush pass's step for the state store: the registry
// file covering L, then the snapshot of every dirty shard. regMu is held
// shared, which keeps registrations out (every one at or below L is then
// applied) and lets cycles run: taken exclusively, it stalled every cycle once
// a pass, for as long as the slowest cycle in flight (its commit-log sync) and
// the queries file's write.
func (b *Broker) flushStreams(L uint64) error {
	b.streams.regMu.RLock()
	err := b.streams.store.WriteRegistry(b.streams.files, L)
	b.streams.regMu.RUnlock()
	if err != nil {
		return err
	}
	return b.streams.store.WriteSnapshots(b.streams.files)
}

// dropStreamPartitions removes the shards of a deleted queue's partitions
// (their queries stay registered). The queue's delete entry is durable, so
// a file a crash brings back names a partition Open no longer knows.
func (b *Broker) dropStreamPartitions(parts []*partition) {
	ids := make(map[[16]byte]bool, len(parts))
	for _, p := range parts {
		ids[p.id] = true
	}
	dropped := b.streams.store.DropPartitions(func(id [16]byte) bool { return ids[id] })
	if err := b.streams.files.RemoveShards(dropped); err != nil {
		b.log.Warn().Err(err).Msg("streams: could not remove the state files of a deleted queue; the next start does")
	}
}
