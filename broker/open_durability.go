package broker

import (
	"errors"
	"fmt"

	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/vfs"
)

// ErrNotDurable is returned by Open when the data directory's file system
// cannot keep comb's promise that an answered push survives a power cut: it
// answers a sync with "not supported", or Config.FlushSyncFS asks for
// syncfs(2) on a file system not known to implement it (issue 21).
var ErrNotDurable = errors.New("the data directory's file system cannot make writes durable as configured")

// checkDurability runs before anything is written (Open): a sync probe in
// the data directory (vfs.ProbeSync; skipped with Sync "never", which
// promises nothing), and with FlushSyncFS the file system type check
// (vfs.SyncFSTrusted).
//
// Errors: ErrNotDurable wrapped with the reason and what to do; the probe's
// own error when it failed otherwise (EIO, ENOSPC).
func checkDurability(fsys vfs.FS, cfg Config, policy commitlog.SyncPolicy) error {
	if policy != commitlog.SyncNever {
		if err := vfs.ProbeSync(fsys, cfg.DataDir); err != nil {
			if errors.Is(err, vfs.ErrSyncUnsupported) {
				return fmt.Errorf("broker: %s: %w: %w; put the data directory on a local file system that supports fsync (ext4, xfs, btrfs; docs/operations.md, \"File systems\")", cfg.DataDir, ErrNotDurable, err)
			}
			return fmt.Errorf("broker: %s: %w", cfg.DataDir, err)
		}
	}
	if cfg.FlushSyncFS {
		if err := vfs.SyncFSTrusted(fsys, cfg.DataDir); err != nil {
			return fmt.Errorf("broker: --flush-syncfs: %w: %w; start without it (every file is then synced by its own descriptor)", ErrNotDurable, err)
		}
	}
	return nil
}
