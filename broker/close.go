package broker

import (
	"errors"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/segment"
)

// Close answers parked long-polls with no messages, waits for operations in
// flight, writes a final cursor checkpoint, syncs and closes every log and
// releases the LOCK. What survives: everything acknowledged before Close, and
// with Sync "interval" or "never" everything appended before it too.
func (b *Broker) Close() error {
	var err error
	b.closeOnce.Do(func() {
		b.gate.Lock()
		b.closed.Store(true)
		b.gate.Unlock()
		close(b.closing)
		b.stopMaintenance()
		b.inflight.Wait()
		b.closeSeries()
		b.wake.Close()
		err = b.closeFiles()
	})
	return err
}

func (b *Broker) closeFiles() error {
	var errs []error
	unclean := false
	b.stopFlusher()
	if b.isStale() {
		// Nothing of its memory may reach a file (follow_commit.go): the
		// next start recovers from the last flush pass and raft's log.
		b.log.Warn().Msg("close: this node lost its leadership with writes possibly in flight; no last flush pass, the next start recovers from the log")
		unclean = true
	} else if b.wal != nil && b.cur != nil && b.wake != nil {
		// Everything durable outside the commit log, so the next start
		// replays (almost) nothing. Without it (a failed log, a full disk)
		// no clean marker is written: the next start recovers from the log.
		if err := b.flushPass(); err != nil {
			if b.cfg.Replicated != nil && (retryable(err) || errors.Is(err, ErrStale)) {
				// A replicated node that lost its leadership (the others
				// stopped first) cannot commit the pass's checkpoint; raft
				// applies the entries again at the next start. Not an error
				// of this node's storage, but no clean marker either.
				b.log.Warn().Err(err).Msg("close: the last flush pass could not commit (leadership lost); the next start applies the log again")
				unclean = true
			} else if IsNoSpace(err) {
				// A full disk (the pass's snapshots, the commit log's
				// start mark): every acknowledged write is still in the
				// synced commit log, which the next start replays, so
				// nothing is lost and the stop is not a failure (issue 10:
				// SIGTERM after a full disk exits 0), but no clean marker.
				b.log.Warn().Err(err).Msg("close: the last flush pass found the disk full; the next start recovers from the commit log")
				unclean = true
			} else {
				errs = append(errs, err)
			}
		}
	}
	if err := b.closeNotes(); err != nil { // after the last flush pass: it syncs the notes
		errs = append(errs, err)
	}
	if b.cur != nil {
		if err := b.cur.Close(); err != nil && !errors.Is(err, cursor.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if b.wal != nil {
		if err := b.wal.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if b.committer != nil {
		if err := b.committer.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	b.mu.Lock()
	sums := make(map[[16]byte]segment.Summary, len(b.parts))
	for _, p := range b.parts {
		if !b.noSync() {
			if err := p.log.Sync(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := p.log.Close(); err != nil {
			errs = append(errs, err)
		}
		if !p.isDamaged() {
			sums[p.id] = p.log.Summary()
		} else if s, ok := damagedSummary(p); ok {
			// A damaged partition keeps what was synced of it, unstamped:
			// the next start reads its files and finds the damage again
			// (a file shorter than that is never a torn tail).
			sums[p.id] = s
		}
		if next := p.log.NextOffset(); b.committedNext(p, next) != next {
			// Segments that never committed (follow_commit.go): the next
			// start must cut them, which a clean marker would not let it.
			unclean = true
		}
	}
	for _, q := range b.queues {
		q.dlqMu.Lock()
		if q.dlq != nil {
			if !b.noSync() {
				if err := q.dlq.Sync(); err != nil {
					errs = append(errs, err)
				}
			}
			if err := q.dlq.Close(); err != nil {
				errs = append(errs, err)
			}
			// Its synced length, so the next start judges a DLQ file cut
			// after the stop as damage too (package recovery). No stamp:
			// a DLQ log is always opened at start, from its summary.
			next := q.dlq.NextOffset()
			sums[q.id] = segment.Summary{FirstOffset: min(q.dlq.FirstOffset(), next), NextOffset: next}
			if b.committedDLQNext(q, next) != next {
				unclean = true
			}
			q.dlq = nil
		}
		q.dlqMu.Unlock()
	}
	b.mu.Unlock()
	if b.wake != nil && len(errs) == 0 && !unclean {
		// Only a Close that synced and closed everything may promise it.
		if err := b.writeCleanMarker(sums); err != nil {
			errs = append(errs, err)
		}
	}
	if err := b.closeSmall(); err != nil {
		errs = append(errs, err)
	}
	if err := b.lockFile.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
