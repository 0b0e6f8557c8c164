// Package vfs is the file-system seam under every on-disk structure of comb
// (segment logs, index files, the commit log, cursor snapshots, the metadata journal and the
// small whole-file caches): just the operations an append-only store needs,
// behind one interface with two implementations here and an error-injecting
// one for tests in vfs/errorfs.
//
//   - OS is the real file system. File.Sync is fdatasync(2) (retried on
//     EINTR): it flushes a file's data and size, which is all a reader needs.
//   - Mem is the in-memory twin for tests. Crash returns what a machine would
//     come back with after a power loss: every file holds the bytes of its
//     last Sync, and with Strict a name (a created file, a rename, a removal,
//     a new directory) survives only if its directory was synced after it.
//     PowerCut (mem_cut.go) is the stricter loss a live twin can take at any
//     instant: besides what was synced it keeps a seeded choice of what was
//     not (pages of unsynced writes, whole or torn, unsynced size changes,
//     a prefix of the unsynced name changes), as Linux may.
//     SetCapacity makes it a small disk that fails writes with ENOSPC;
//     SetSyncFSNoop makes its SyncFS sync nothing, as syncfs(2) on a file
//     system without sync_fs (FUSE, some network file systems).
//   - errorfs.FS (package vfs/errorfs) wraps another FS and fails chosen
//     calls with chosen errors (ENOSPC, EIO, ...): named failpoints at every
//     write and sync boundary, so a test can walk every boundary of a
//     scenario and fail each in turn.
//
// It must not know about any format: bytes in, bytes out.
//
// # Which file systems keep the promise
//
// ProbeSync checks at start-up that a directory's file system syncs at all
// (one without fsync answers EINVAL or ENOTSUP). SyncFSTrusted says whether
// one syncfs(2) may stand in for an fdatasync per file: only on ext4, xfs and
// btrfs (statfs f_type), whose sync_fs writes back and commits everything,
// and on Linux 5.8 or later, which reports writeback errors from syncfs. On
// others (FUSE without sync_fs, some network file systems) syncfs returns 0
// having synced nothing, so comb syncs each file by its own descriptor
// unless told otherwise (issue 21).
//
// # Durability vocabulary
//
// A write is durable once a Sync of its file returned nil after it; a new
// name (file, directory, rename target) is durable once SyncDir of its parent
// returned nil after it was made. WriteFileAtomic does both in the only order
// that leaves either the old contents or the new ones after a crash: write a
// temporary file, Sync it, rename it over the target, SyncDir the parent.
package vfs
