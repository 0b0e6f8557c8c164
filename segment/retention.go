package segment

import "fmt"

// DeleteFilesBefore removes, oldest first, every sealed segment file whose
// last offset is < offset, with its index; the active file is never removed.
// Retention is by whole file only, so FirstOffset() afterwards may still be
// below offset. Returns the files and segment-file bytes removed. Not safe
// concurrently with Append (the caller holds the partition lock); readers
// are waited for. A crash midway leaves a prefix of the files removed, which
// Open accepts.
func (l *Log) DeleteFilesBefore(offset uint64) (files int, bytes int64, err error) {
	if l.closed.Load() {
		return 0, 0, ErrClosed
	}
	if err := l.pin(); err != nil {
		return 0, 0, fmt.Errorf("segment log %s: %w", l.dir, err)
	}
	defer l.unpin()
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.files) > 1 && l.files[0].next <= offset {
		fi := l.files[0]
		l.handleMu.Lock()
		if s := l.sealed; s != nil && s.info == fi {
			l.sealed = nil
			s.unref()
			l.cache.adjust(l, -2)
		}
		l.handleMu.Unlock()
		if err := l.fs.Remove(join(l.dir, segName(fi.base))); err != nil {
			return files, bytes, fmt.Errorf("segment log %s: retention: %w", l.dir, err)
		}
		_ = l.fs.Remove(join(l.dir, idxName(fi.base)))
		l.files = l.files[1:]
		files++
		bytes += fi.size
	}
	if files > 0 {
		l.files = append([]*fileInfo(nil), l.files...) // let the removed entries go
	}
	return files, bytes, nil
}

// SealedBefore returns the offset after the newest sealed file all of whose
// segments are stamped before tsMicros (µs), or FirstOffset() when there is
// none: DeleteFilesBefore(SealedBefore(ts)) removes exactly the files a
// time-based retention rule may drop (by whole file, never the active one).
// It answers from the in-memory file list without opening anything and
// without counting as a use (see TakeUsed); a Log opened from a Summary and
// not used since lists its directory first.
func (l *Log) SealedBefore(tsMicros int64) uint64 {
	if l.unlistedNow() {
		if err := l.load(); err != nil {
			return l.FirstOffset()
		}
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	off := l.firstLocked()
	for i := 0; i < len(l.files)-1; i++ {
		fi := l.files[i]
		if fi.next > fi.base && fi.lastTs >= tsMicros {
			break
		}
		off = max(off, fi.next)
	}
	return off
}

func (l *Log) unlistedNow() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.unlisted
}
