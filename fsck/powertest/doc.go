// Package powertest proves comb's durability promises across simulated power
// losses (issue 21): the real broker runs in-process on vfs.Mem, several
// goroutines drive mixed load at it, and at a seeded random moment the power
// is cut (vfs.Mem.PowerCut: only what was synced survives for certain, plus a
// seeded choice of what was not, as on Linux). The broker is then reopened on
// what is left and every promise it made before the cut is checked:
//
//   - every push answered queued or duplicate (pushes and transactions) is
//     present exactly once, in the partition and with the message id its
//     answer gave; found by draining the queue with a fresh consumer group;
//   - no message whose ack (completed, or failed into the DLQ) was answered
//     success is delivered again to that group, and every message answered
//     "moved to the DLQ" is in the DLQ, once;
//   - no cursor goes back (each partition's TotalConsumed after a reopen is at
//     least what the previous reopen found) or past its high-water mark;
//   - fsck on the directory the cut left (copied to disk: fsck reads files
//     with package os) never exits 2.
//
// A kill -9 (fsck/crashtest) keeps the page cache, so it cannot see a missing
// fdatasync or directory fsync; this harness can. It runs with the twin's
// SyncFS a no-op (vfs.Mem.SetSyncFSNoop), as on a FUSE file system without
// sync_fs, so durability that rests on syncfs(2) alone shows as a loss.
//
// It owns no production code and needs no build tag: `make test` runs a few
// cuts, `make powertest` 100 (POWER_CUTS). Knobs (environment): POWER_CUTS
// (default 3), POWER_SEED (default: time-based, logged; rerun with it to get
// the same workload choices, cut delays and cut outcomes, though goroutine
// interleavings differ), POWER_PARTITIONS (default 32, so flush passes see
// at least 8 dirty logs), POWER_MAX_RUN_MS (longest run before a cut, default
// 600), POWER_MAX_OPEN_FILES (the broker's handle budget, default 48: logs are
// released and loaded again; -1 = no bound), POWER_SYNCFS=real (SyncFS syncs, to compare).
package powertest
