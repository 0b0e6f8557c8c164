package commitlog

import (
	"fmt"
	"path/filepath"
)

// Read calls fn with every durable entry from LSN from on, in order (the
// entries written so far under SyncInterval and SyncNever), until fn returns
// an error (returned as is) or the durable end. Entries before the first
// file still kept (truncated) are skipped: FirstLSN says where the log
// starts. Payloads are valid only during fn.
//
// Errors: fn's; the file system's; ErrCorrupt when a written batch no longer
// verifies (the disk changed under the log).
func (l *Log) Read(from LSN, fn func(Entry) error) error {
	durable := l.DurableLSN()
	l.mu.Lock()
	from = max(from, l.start)
	type span struct {
		w   *walFile
		end int64
	}
	var spans []span
	for i, w := range l.files {
		if w.first == 0 || w.last == 0 {
			continue
		}
		if i+1 < len(l.files) && l.files[i+1].first != 0 && l.files[i+1].first <= from {
			continue // every entry of w is before from
		}
		spans = append(spans, span{w, w.end})
	}
	l.mu.Unlock()
	for _, s := range spans {
		buf := make([]byte, s.end)
		if _, err := s.w.f.ReadAt(buf, 0); err != nil {
			return fmt.Errorf("commitlog %s: %w", filepath.Base(s.w.path), err)
		}
		_, hlen, err := decodeHeader(buf)
		if err != nil {
			return fmt.Errorf("%w: %s: header: %v", ErrCorrupt, filepath.Base(s.w.path), err)
		}
		for pos := hlen; pos < len(buf); {
			body, n, err := s.w.format.Next(buf[pos:])
			if err != nil {
				return fmt.Errorf("%w: %s: batch at byte %d: %v", ErrCorrupt, filepath.Base(s.w.path), pos, err)
			}
			pos += n
			stop := false
			_, _, err = eachEntry(body, func(e Entry) error {
				if e.LSN > durable {
					stop = true
					return errStop
				}
				if e.LSN < from {
					return nil
				}
				return fn(e)
			})
			if stop {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

type stopError struct{}

func (stopError) Error() string { return "stop" }

var errStop error = stopError{}

// FirstLSN returns the first LSN the log still holds (NextLSN when none):
// entries below the last TruncateBefore are not held, even where they still
// share a file with later ones.
func (l *Log) FirstLSN() LSN {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.files {
		if w.first != 0 && w.last != 0 && w.last >= l.start {
			return min(max(w.first, l.start), l.next)
		}
	}
	return l.next
}

// TruncateBefore removes every file all of whose entries are below lsn (the
// newest file always stays). The caller guarantees that everything those
// entries changed is durable elsewhere. A crash after it brings back at most
// files whose entries the caller skips anyway.
//
// Errors: the file system's (files not yet removed stay in the log).
func (l *Log) TruncateBefore(lsn LSN) error {
	l.mu.Lock()
	if err := l.sealLocked(lsn); err != nil {
		l.mu.Unlock()
		return err
	}
	if lsn > l.start {
		// Entries below lsn may stay in a file that also holds later ones:
		// the start mark keeps Read and recovery from returning them.
		if err := writeStart(l.fs, l.dir, lsn, l.noSync()); err != nil {
			l.mu.Unlock()
			return fmt.Errorf("commitlog: truncate: %w", err)
		}
		l.start = lsn
	}
	var drop []*walFile
	for len(l.files) > 1 {
		w, next := l.files[0], l.files[1]
		if next.first == 0 || next.first > lsn {
			break
		}
		drop = append(drop, w)
		l.files = l.files[1:]
	}
	l.mu.Unlock()
	for _, w := range drop {
		w.f.Close()
		if err := l.fs.Remove(w.path); err != nil {
			return fmt.Errorf("commitlog: truncate: %w", err)
		}
	}
	if len(drop) > 0 && !l.noSync() {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("commitlog: truncate: %w", err)
		}
	}
	return nil
}

// sealLocked starts a new file when every entry of the newest one is below
// lsn and no entry is pending, so that truncation can drop it too (a clean
// shutdown then leaves a log with nothing to replay). The new file is named
// now, so that recovery numbers on from it.
func (l *Log) sealLocked(lsn LSN) error {
	w := l.files[len(l.files)-1]
	if w.first == 0 || w.last == 0 || w.last >= lsn || l.next != w.last+1 || l.pend != nil || l.closed || l.err != nil {
		return nil
	}
	nw := l.spare
	if nw == nil {
		var err error
		l.spares++
		if nw, err = prepareFile(l.fs, filepath.Join(l.dir, spareName(l.spares)), l.opts.InitialBytes, l.noSync()); err != nil {
			l.noSpace = err
			return nil // nothing to drop this time; a later pass seals it
		}
	}
	if !w.synced && !l.noSync() {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("commitlog: seal %s: %w", filepath.Base(w.path), err)
		}
		w.synced = true
	}
	path := filepath.Join(l.dir, fileName(l.next))
	if err := l.fs.Rename(nw.path, path); err != nil {
		return fmt.Errorf("commitlog: seal: %w", err)
	}
	if !l.noSync() {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("commitlog: seal: %w", err)
		}
	}
	nw.path, nw.first = path, l.next
	if nw == l.spare {
		l.spare = nil
	}
	l.files = append(l.files, nw)
	l.kickPreparer()
	return nil
}
