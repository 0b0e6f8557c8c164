package notes

import (
	"fmt"
	"os"

	"github.com/combmq/comb/record"
)

// compactMinDeadBytes is how many dropped bytes the file must carry before a
// rewrite is worth it (and dropped bytes must also outweigh live ones).
var compactMinDeadBytes int64 = 1 << 20

// Keep tells Prune what survives of a partition: notes at or after first,
// and nothing at all when live is false (the partition or its queue is gone).
type Keep func(partition [16]byte) (first uint64, live bool)

// Hold tells Prune which tombstones of a live partition to keep although
// they are below its first retained offset: a retained dead letter still
// refers to the message (spec 4.5: a DLQ entry is deleted with its message,
// and a deleted message's entry must stay hidden). Nil holds none.
type Hold func(ref MessageRef) bool

// Prune drops every note keep no longer covers but the tombstones hold
// keeps, then rewrites the file when its dropped bytes outweigh the live ones
// (see doc.go). Cost: O(partitions with notes + notes dropped). The
// rewrite's errors are returned; memory is pruned regardless.
func (s *Store) Prune(keep Keep, hold Hold) error {
	s.mu.Lock()
	dropped := false
	for pid, pn := range s.parts {
		first, live := keep(pid)
		if !live {
			first = ^uint64(0)
		}
		for off := range pn.deleted {
			if off < first && (!live || hold == nil || !hold(MessageRef{pid, off})) {
				delete(pn.deleted, off)
				s.nDeleted.Add(-1)
				s.gen.Add(1)
				s.liveBytes -= int64(len(EncodeTombstone(MessageRef{pid, off})) + record.HeaderSize)
				dropped = true
			}
		}
		for off, es := range pn.traces {
			if off < first {
				for _, e := range es {
					e.dead = true
					s.liveBytes -= int64(e.size)
				}
				delete(pn.traces, off)
				dropped = true
			}
		}
		if len(pn.deleted) == 0 && len(pn.traces) == 0 {
			delete(s.parts, pid)
		}
	}
	if dropped {
		s.sweepNamesLocked()
	}
	dead := s.size - s.liveBytes
	s.mu.Unlock()
	if dead > compactMinDeadBytes && dead > s.liveSize() {
		return s.compact()
	}
	return nil
}

// TombstonesBelow returns the tombstones of live partitions below the first
// offset keep gives them, in no order: those Prune drops unless a Hold keeps
// them.
func (s *Store) TombstonesBelow(keep Keep) []MessageRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MessageRef
	for pid, pn := range s.parts {
		if len(pn.deleted) == 0 {
			continue
		}
		first, live := keep(pid)
		if !live {
			continue
		}
		for off := range pn.deleted {
			if off < first {
				out = append(out, MessageRef{pid, off})
			}
		}
	}
	return out
}

// sweepNamesLocked removes dropped events from the by-name lists.
func (s *Store) sweepNamesLocked() {
	for name, es := range s.byName {
		kept := es[:0]
		for _, e := range es {
			if !e.dead {
				kept = append(kept, e)
			}
		}
		clear(es[len(kept):])
		if len(kept) == 0 {
			delete(s.byName, name)
		} else {
			s.byName[name] = kept
		}
	}
}

func (s *Store) liveSize() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.liveBytes
}

// compact rewrites the file with the live notes only: the new file is written
// and synced as FileName.tmp, renamed over the old one and the directory
// synced, so a crash leaves the old file or the new one, both whole. Appends
// wait meanwhile (it holds both locks).
func (s *Store) compact() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil || s.failed != nil {
		return nil
	}
	buf, seed, err := newHeader()
	if err != nil {
		return err
	}
	rf := recordFormat.WithSeed(seed)
	for pid, pn := range s.parts {
		for off := range pn.deleted {
			if buf, err = rf.Append(buf, EncodeTombstone(MessageRef{pid, off})); err != nil {
				return fmt.Errorf("notes: compact: %w", err)
			}
		}
		for _, es := range pn.traces {
			for _, e := range es {
				if buf, err = rf.Append(buf, EncodeTrace(&e.Trace)); err != nil {
					return fmt.Errorf("notes: compact: %w", err)
				}
			}
		}
	}
	tmp := s.path + ".tmp"
	f, err := s.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("notes: compact: %w", err)
	}
	if _, err := f.WriteAt(buf, 0); err != nil {
		f.Close()
		return fmt.Errorf("notes: compact: %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("notes: compact: %s: %w", tmp, err)
	}
	if err := s.fs.Rename(tmp, s.path); err != nil {
		f.Close()
		return fmt.Errorf("notes: compact: %w", err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		// The rename may or may not be durable; either file is whole, but
		// appends must go to the one the next Open reads: refuse them.
		s.failed = err
		f.Close()
		return fmt.Errorf("notes: compact: sync %s: %w", s.dir, err)
	}
	s.f.Close()
	s.f, s.rf, s.size, s.synced = f, rf, int64(len(buf)), int64(len(buf))
	s.liveBytes = s.size - int64(len(buf[:headerLen(buf)]))
	return nil
}

// headerLen is the length of the header frame at the start of a file image.
func headerLen(b []byte) int {
	_, n, err := headerFormat.Next(b)
	if err != nil {
		return 0
	}
	return n
}
