package fsck

import (
	"path/filepath"

	"github.com/combmq/comb/commitlog"
)

// repairCommitLog runs the commit log's own recovery (commitlog.Open, then
// Close): a torn last batch is copied to <data>/quarantine/commitlog/ and
// zeroed, synced. Damage before a verified batch makes it refuse, changing
// nothing.
func repairCommitLog(dataDir string) error {
	l, _, err := commitlog.Open(filepath.Join(dataDir, dirCommitLog), commitlog.Options{
		QuarantineDir: filepath.Join(dataDir, dirQuarantine, dirCommitLog)})
	if err != nil {
		return err
	}
	return l.Close()
}
