package commitlog

import (
	"fmt"
	"path/filepath"
	"time"
)

// commitLoop is the committer: it takes the gathered batch, writes each of
// its chunks as one frame, syncs per the policy and completes the batch's
// tickets. Entries appended meanwhile form the next batch.
func (l *Log) commitLoop() {
	defer l.done.Done()
	for {
		stopping := false
		select {
		case <-l.kick:
		case <-l.stop:
			stopping = true
		}
		if !stopping {
			l.gather()
		}
		l.mu.Lock()
		if l.abandoned {
			l.mu.Unlock()
			return
		}
		b := l.pend
		l.pend = nil
		l.mu.Unlock()
		if b != nil {
			l.group.took(time.Now())
			l.commit(b)
		}
		if stopping {
			return
		}
	}
}

// commit writes and syncs b and completes its tickets. A failure fails the
// log (ErrFailed): every later Append and batch gets the error.
func (l *Log) commit(b *batch) {
	if l.opts.Sync == SyncAlways {
		// Through the tickets' completion: AwaitSync's callers start their
		// syncs once nothing of this batch is left for the device.
		l.gate.begin()
		defer l.gate.end()
	}
	l.mu.Lock()
	err := l.err
	l.mu.Unlock()
	var last LSN
	var written []*walFile
	for _, c := range b.chunks {
		if err != nil {
			break
		}
		if err = l.enter(c); err != nil {
			break
		}
		w := c.w
		putBatchHead(c.buf[headerLen():], c.first, c.count)
		frame, ferr := w.format.Finish(c.buf, 0)
		if ferr != nil {
			err = fmt.Errorf("%w: batch of %d bytes: %v", ErrFailed, len(c.buf), ferr)
			break
		}
		if _, werr := w.f.WriteAt(frame, w.end); werr != nil {
			err = fmt.Errorf("%w: write %s at byte %d: %v", ErrFailed, filepath.Base(w.path), w.end, werr)
			break
		}
		putChunkBuf(c.pool, frame)
		c.buf, c.pool = nil, nil
		l.mu.Lock()
		w.end += int64(len(frame))
		w.reserved -= int64(len(frame))
		w.last = c.first + LSN(c.count) - 1
		l.mu.Unlock()
		w.synced = false
		last = w.last
		if len(written) == 0 || written[len(written)-1] != w {
			written = append(written, w)
		}
	}
	if err == nil && l.opts.Sync == SyncAlways {
		for _, w := range written {
			start := time.Now()
			serr := w.f.Sync()
			if l.opts.OnSync != nil {
				l.opts.OnSync(time.Since(start).Microseconds())
			}
			if serr != nil {
				err = fmt.Errorf("%w: fdatasync %s: %v", ErrFailed, filepath.Base(w.path), serr)
				break
			}
			w.synced = true
		}
	}
	if err != nil {
		l.mu.Lock()
		if l.err == nil {
			l.err = err
		}
		err = l.err
		l.mu.Unlock()
		b.err = err
	} else if last > 0 {
		l.durable.Store(uint64(last))
	}
	l.group.groups.Add(1)
	l.group.waiters.Add(uint64(b.waiters.Load()))
	close(b.done)
	l.kickPreparer()
}

// headerLen is where a chunk's batch head starts in its buffer.
func headerLen() int { return frameOverhead - batchHead }

// enter readies c's file for its first frame: a spare is renamed to its
// first LSN (the directory synced) so that recovery finds it in order, and
// the file before it is made durable first, so only the newest file can be
// torn.
func (l *Log) enter(c *chunk) error {
	w := c.w
	if w.first != 0 {
		return nil
	}
	l.mu.Lock()
	var prev *walFile
	for i, f := range l.files {
		if f == w && i > 0 {
			prev = l.files[i-1]
		}
	}
	l.mu.Unlock()
	if prev != nil && !prev.synced && !l.noSync() {
		l.syncMu.Lock()
		err := prev.f.Sync()
		l.syncMu.Unlock()
		if err != nil {
			return fmt.Errorf("%w: fdatasync %s: %v", ErrFailed, filepath.Base(prev.path), err)
		}
		prev.synced = true
	}
	path := filepath.Join(l.dir, fileName(c.first))
	if err := l.fs.Rename(w.path, path); err != nil {
		return fmt.Errorf("%w: rename %s: %v", ErrFailed, filepath.Base(w.path), err)
	}
	if !l.noSync() {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("%w: sync %s: %v", ErrFailed, l.dir, err)
		}
	}
	l.mu.Lock()
	w.path, w.first = path, c.first
	l.mu.Unlock()
	return nil
}

// prepareLoop keeps one spare file ready, so that rotating costs appends
// nothing; a failure (a full disk) is retried every second and reported by
// Err meanwhile.
func (l *Log) prepareLoop() {
	defer l.done.Done()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		select {
		case <-l.prepKick:
		case <-retry.C:
		case <-l.stop:
			return
		}
		if !l.extendAhead() {
			retry.Reset(time.Second)
		}
		l.mu.Lock()
		need := l.spare == nil && !l.closed && l.err == nil
		l.spares++
		name := spareName(l.spares)
		l.mu.Unlock()
		if !need {
			continue
		}
		w, err := prepareFile(l.fs, filepath.Join(l.dir, name), l.opts.InitialBytes, l.noSync())
		l.mu.Lock()
		switch {
		case err != nil:
			l.noSpace = err
			retry.Reset(time.Second)
		case l.closed || l.spare != nil:
			w.f.Close()
			_ = l.fs.Remove(w.path)
		default:
			l.spare, l.noSpace = w, nil
		}
		l.mu.Unlock()
	}
}

// extendAhead doubles the current file (up to FileBytes) once less than half
// of what it holds is left, so appenders rarely extend it themselves; on a
// disk without room for the doubling it grows by InitialBytes once less
// than that is left. It reports false when even that failed (a full disk:
// retried later, and Err reports it).
func (l *Log) extendAhead() bool {
	l.mu.Lock()
	w := l.files[len(l.files)-1]
	used := w.end + w.reserved
	size := w.size.Load()
	stop := l.closed || l.err != nil
	l.mu.Unlock()
	if stop || size >= l.opts.FileBytes || size-used >= size/2 {
		return true
	}
	err := w.extend(min(2*size, l.opts.FileBytes), l.noSync())
	if err != nil && size-used >= l.opts.InitialBytes {
		// No room for the doubling, but room for InitialBytes of appends:
		// nothing fails yet, so nothing is reported; the doubling is tried
		// again after the next batch.
		return true
	}
	if err != nil {
		err = w.extend(min(size+l.opts.InitialBytes, l.opts.FileBytes), l.noSync())
	}
	l.mu.Lock()
	if err != nil {
		l.noSpace = err
	} else if l.spare != nil {
		l.noSpace = nil
	}
	l.mu.Unlock()
	return err == nil
}

// syncLoop fdatasyncs the newest file every SyncInterval (SyncInterval only).
func (l *Log) syncLoop() {
	defer l.done.Done()
	t := time.NewTicker(l.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-l.stop:
			return
		}
		l.mu.Lock()
		w := l.files[len(l.files)-1]
		failed := l.err != nil
		l.mu.Unlock()
		if failed {
			continue
		}
		l.syncMu.Lock()
		err := w.f.Sync()
		l.syncMu.Unlock()
		if err != nil {
			l.mu.Lock()
			if l.err == nil {
				l.err = fmt.Errorf("%w: fdatasync %s: %v", ErrFailed, filepath.Base(w.path), err)
			}
			l.mu.Unlock()
		}
	}
}
