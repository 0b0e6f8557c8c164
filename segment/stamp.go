package segment

import (
	"encoding/binary"
	"fmt"
	"path/filepath"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"
)

// Stamp fingerprints a closed log's directory with two stats and no reads:
// the directory's inode, mtime and ctime (they change when a file is created,
// removed or renamed in it, and a directory restored from a copy is a new
// inode) and the newest segment file's inode, size, mtime and ctime (they
// change with every append, truncation or in-place copy). The broker stores
// it with each partition's Summary in the clean-shutdown marker and trusts
// the Summary at the next start only when Stamp still returns the same value
// (issue 7 follow-up: partition files restored from an older copy under
// newer cursor checkpoints must be opened and their cursors clamped, not
// taken from a stale Summary).
//
// A mismatch never loses data: it only costs the full tail-verifying Open.
// The result is never 0 (0 means "no stamp" in a Summary). Errors: the stat
// errors, wrapped with the path (a missing newest file is one).
func Stamp(dir string, s Summary) (uint64, error) {
	var buf [8 * 8]byte
	b := buf[:0]
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, fmt.Errorf("segment log %s: stamp: %w", dir, err)
	}
	b = appendStat(b, &st, false)
	if s.ActiveBase > 0 {
		name := filepath.Join(dir, segName(s.ActiveBase))
		if err := unix.Stat(name, &st); err != nil {
			return 0, fmt.Errorf("segment log %s: stamp: %w", name, err)
		}
		b = appendStat(b, &st, true)
	}
	return max(xxhash.Sum64(b), 1), nil
}

// SummaryMatches reports whether s carries a stamp and dir still has it.
func SummaryMatches(dir string, s Summary) bool {
	if s.Stamp == 0 {
		return false
	}
	st, err := Stamp(dir, s)
	return err == nil && st == s.Stamp
}

func appendStat(b []byte, st *unix.Stat_t, size bool) []byte {
	b = binary.LittleEndian.AppendUint64(b, st.Ino)
	if size {
		b = binary.LittleEndian.AppendUint64(b, uint64(st.Size))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(st.Mtim.Nano()))
	return binary.LittleEndian.AppendUint64(b, uint64(st.Ctim.Nano()))
}

// Synced reports whether everything appended to l is durable (no append
// since the last successful Sync). A Summary and Stamp taken while Synced
// holds, with appends excluded, describe what a crash leaves on disk.
func (l *Log) Synced() bool { return !l.dirty() }

// empty reports whether l holds no record (never written, or everything
// deleted by retention), from memory only.
func (l *Log) empty() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.firstLocked() >= l.next
}
