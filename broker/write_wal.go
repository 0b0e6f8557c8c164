package broker

import (
	"errors"
	"time"

	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/lsn"
	"github.com/combmq/comb/walentry"
)

// Commit-log entry kinds (package walentry has their payload layouts).
const (
	walMeta       = walentry.Meta
	walPush       = walentry.Push
	walDLQ        = walentry.DLQ
	walCheckpoint = walentry.Checkpoint
	walTx         = walentry.Tx
)

// commitLog is the seam between the broker and its write-ahead log:
// *commitlog.Log through localLog, and a replicated log (issue 15) may take
// its place without the broker knowing. Append orders entries (it copies the
// payload: the caller may reuse its buffer at once); a ticket's
// Wait returns nil once its entry is durable (committed); Read replays
// durable entries; TruncateBefore drops what everything else has made
// durable.
type commitLog interface {
	Append(kind byte, payload []byte) (walTicket, error)
	Read(from uint64, fn func(lsn uint64, kind byte, payload []byte) error) error
	DurableLSN() uint64
	FirstLSN() uint64
	TruncateBefore(lsn uint64) error
	// RetainedBytes is what the log holds since its last truncation.
	RetainedBytes() int64
	// Err is nil while appends can succeed, else why not (a full disk is
	// retryable, a failed sync is not).
	Err() error
	Close() error
}

// walTicket is what Append returns: package lsn's Ticket, the one "append,
// then wait" shape of the local and the replicated log (and of the cursor
// engine's checkpoints, cursorLog). The zero ticket is nothing appended.
type walTicket = lsn.Ticket

// localLog is the single-node commit log.
type localLog struct{ l *commitlog.Log }

func (w localLog) Append(kind byte, payload []byte) (walTicket, error) {
	return w.l.Append(kind, payload)
}

func (w localLog) Read(from uint64, fn func(lsn uint64, kind byte, payload []byte) error) error {
	return w.l.Read(commitlog.LSN(from), func(e commitlog.Entry) error { return fn(uint64(e.LSN), e.Kind, e.Payload) })
}

func (w localLog) DurableLSN() uint64              { return uint64(w.l.DurableLSN()) }
func (w localLog) FirstLSN() uint64                { return uint64(w.l.FirstLSN()) }
func (w localLog) TruncateBefore(lsn uint64) error { return w.l.TruncateBefore(commitlog.LSN(lsn)) }
func (w localLog) Err() error                      { return w.l.Err() }
func (w localLog) RetainedBytes() int64            { return w.l.RetainedBytes() }
func (w localLog) Close() error                    { return w.l.Close() }

// cursorLog hands the cursor engine's checkpoints to the broker's commit log
// (set once Open has opened it; the engine writes none before Start).
type cursorLog struct{ b *Broker }

func (c cursorLog) AppendCheckpoint(body []byte) (lsn.Ticket, error) {
	start := time.Now()
	t, err := c.b.wal.Append(walCheckpoint, body)
	if err != nil {
		return lsn.Ticket{}, err
	}
	// The wait is timed into the checkpoint histogram (Prometheus
	// comb_checkpoint_latency_seconds): from the append to durable.
	return lsn.NewTicket(t.LSN, lsn.WaitFunc(func() error {
		err := t.Wait()
		c.b.ckptHist.observe(time.Since(start).Microseconds())
		return err
	})), nil
}

// waitLast waits for the ticket with the highest LSN of ts: entries become
// durable in LSN order, so it covers them all.
func waitLast(ts []walTicket) error {
	var last walTicket
	for _, t := range ts {
		if t.Appended() && (!last.Appended() || t.LSN > last.LSN) {
			last = t
		}
	}
	return last.Wait() // nil for none
}

// Retryable: a full disk leaves the commit log usable (commitlog.ErrNoSpace:
// nothing was appended); anything else failed it for good.
//
// A replicated log's refusals that a later leader or term lifts (not the
// leader, leadership lost) say so with a Retryable method.
func (c cursorLog) Retryable(err error) bool { return retryable(err) }

func retryable(err error) bool {
	var r interface{ Retryable() bool }
	return errors.Is(err, commitlog.ErrNoSpace) || errors.As(err, &r) && r.Retryable()
}
