package entrylog

import "fmt"

// CompactStats is what one Compact did.
type CompactStats struct {
	Files       int   // files removed
	CopiedBytes int64 // live frames copied to the active file
	FreedBytes  int64 // bytes of the removed files
}

// compactDue says whether a file other than the active one is worth
// compacting: under a quarter of its frames' bytes are live (copying them
// costs at most a third of what it frees).
func compactDue(ef *elFile) bool {
	return ef.live*4 < ef.size-HeaderSize
}

// Compact rewrites every file but the active one whose live frames are
// under a quarter of its bytes: their live frames are copied unchanged to
// the active file, with the trim of each partition that still has frames in
// another file (so the dead frames there stay dead), the copies are synced
// (Sync's steps), and then the old file is removed and the directory synced.
// A crash before the removal leaves both copies, and Open keeps one (same
// partition and base offset). It holds the Log's lock throughout: appends
// and reads wait (a file copies at most MaxFileBytes/4).
//
// Errors: ErrClosed; the file system's (what was copied stays valid; the
// old file stays until a later Compact).
func (l *Log) Compact() (CompactStats, error) {
	var st CompactStats
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return st, ErrClosed
	}
	var due []*elFile
	for _, seq := range l.order[:max(len(l.order)-1, 0)] {
		if ef := l.files[seq]; compactDue(ef) {
			due = append(due, ef)
		}
	}
	type moved struct {
		id  [16]byte
		seq uint64
	}
	var done []moved
	var err error
	var buf []byte
copying:
	for _, ef := range due {
		for id, p := range l.parts {
			if !p.inFile(ef.seq) {
				continue
			}
			for i := range p.exts {
				e := &p.exts[i]
				if e.File != ef.seq {
					continue
				}
				if cap(buf) < int(e.Size) {
					buf = make([]byte, e.Size)
				}
				frame := buf[:e.Size]
				if _, err = ef.f.ReadAt(frame, e.Pos); err != nil {
					err = fmt.Errorf("entrylog %s: read at %d: %w", ef.name, e.Pos, err)
					break copying
				}
				body, _, ferr := ef.format.Next(frame)
				if ferr != nil {
					err = fmt.Errorf("entrylog %s byte %d: %v: %w", ef.name, e.Pos, ferr, ErrCorrupt)
					break copying
				}
				nf, pos, size, werr := l.writeLocked(func(b []byte) []byte { return append(b, body...) })
				if werr != nil {
					err = werr
					break copying
				}
				ef.live -= int64(e.Size)
				e.File, e.Pos, e.Size = nf.seq, pos, size
				nf.live += int64(size)
				p.addFrame(nf.seq)
				st.CopiedBytes += int64(size)
			}
			if p.trim > 0 && p.inOther(ef.seq) {
				nf, _, _, werr := l.writeLocked(func(b []byte) []byte { return appendTrimBody(b, id, p.trim) })
				if werr != nil {
					err = werr
					break copying
				}
				p.addFrame(nf.seq)
			}
			done = append(done, moved{id, ef.seq})
		}
	}
	l.mu.Unlock()
	if err != nil {
		return st, err
	}
	if len(due) == 0 {
		return st, nil
	}
	if err := l.syncFiles(); err != nil {
		return st, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return st, ErrClosed
	}
	for _, ef := range due {
		if err := ef.f.Close(); err != nil {
			return st, fmt.Errorf("entrylog %s: close: %w", ef.name, err)
		}
		if err := l.fs.Remove(ef.name); err != nil {
			return st, fmt.Errorf("entrylog %s: remove: %w", ef.name, err)
		}
		delete(l.files, ef.seq)
		for i, s := range l.order {
			if s == ef.seq {
				l.order = append(l.order[:i], l.order[i+1:]...)
				break
			}
		}
		st.Files++
		st.FreedBytes += ef.size
	}
	for _, m := range done {
		if p := l.parts[m.id]; p != nil && !p.dropFile(m.seq) {
			delete(l.parts, m.id)
		}
	}
	if !l.opts.NoSync {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return st, fmt.Errorf("entrylog %s: sync the directory: %w", l.dir, err)
		}
	}
	return st, nil
}

// inFile reports whether the partition has frames in file seq.
func (p *part) inFile(seq uint64) bool {
	for _, f := range p.frames {
		if f.seq == seq {
			return true
		}
	}
	return false
}
