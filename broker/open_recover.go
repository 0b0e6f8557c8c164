package broker

import (
	"fmt"

	"github.com/combmq/comb/walentry"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
)

// recover finishes what a crash interrupted, after the commit log was
// replayed (open.go):
//
//  1. legacy redo records (an upgraded cursor directory) are replayed like
//     commit-log transactions (replayTx);
//  2. every cursor is clamped to its partition's high-water mark (a torn tail
//     may have taken messages a cursor had passed, with Sync other than
//     "always"), and a lease whose span reaches past it is dropped;
//  3. cursors of partitions that no longer exist are deleted.
//
// Everything repaired is logged.
func (b *Broker) recover(legacy [][]byte) error {
	// Redo records a cursor directory from before the commit log still held:
	// committed transactions whose effects may be missing.
	for _, raw := range legacy {
		rec, err := walentry.DecodeTx(raw)
		if err != nil {
			b.log.Error().Err(err).Int("bytes", len(raw)).Msg("recovery: skipping an undecodable transaction redo record")
			continue
		}
		if err := b.replayTx(&rec); err != nil {
			return err
		}
	}

	type fix struct {
		k      cursor.Key
		st     lease.State
		delete bool
	}
	var fixes []fix
	b.cur.Range(func(k cursor.Key, st lease.State) bool {
		p := b.parts[k.Partition]
		if p == nil {
			fixes = append(fixes, fix{k: k, delete: true})
			return true
		}
		if p.isDamaged() {
			return true // its high-water mark is unknown: leave its cursors be
		}
		hwm := p.log.NextOffset() - 1
		orig := st
		if st.Committed > hwm {
			b.log.Warn().Str("queue", p.q.name).Str("partition", p.name).Str("group", k.Group).
				Uint64("committed", st.Committed).Uint64("highWaterMark", hwm).
				Msg("recovery: clamped a cursor past the partition's high-water mark")
			st.Committed = hwm
		}
		if st.Lease.Held() && st.Lease.End > hwm {
			b.log.Warn().Str("queue", p.q.name).Str("partition", p.name).Str("group", k.Group).
				Uint64("spanEnd", st.Lease.End).Uint64("highWaterMark", hwm).
				Msg("recovery: dropped a lease over lost messages")
			st.Lease = lease.Lease{}
		}
		if st != orig {
			fixes = append(fixes, fix{k: k, st: st})
		}
		return true
	})
	for _, f := range fixes {
		if f.delete {
			b.cur.Delete(f.k)
		} else {
			b.cur.Set(f.k, f.st)
		}
	}
	if len(fixes) > 0 || len(legacy) > 0 {
		return b.cur.Wait()
	}
	return nil
}

// replayTx finishes a committed transaction (its commit-log entry, or a
// legacy redo record) whose effects may be missing: states still equal to
// their "before" get their "after"; pushes and DLQ entries missing from
// their logs (dedup by transactionId and key) are appended. Idempotent.
func (b *Broker) replayTx(rec *walentry.TxRecord) error {
	replicated := b.cfg.Replicated != nil
	for _, s := range rec.States {
		k := cursor.Key{Partition: s.Partition, Group: s.Group}
		cur, ok := b.cur.Get(k)
		if ok == s.HadPre && (!ok || cur == s.Pre || replicated && sameButExpiry(cur, s.Pre)) {
			if replicated {
				// A follower applying the leader's transaction: the leader
				// checkpoints these states; this node only holds them (it
				// appends nothing), so a failover keeps the acks. Their
				// lease expiries are the leader's clock: rebased on this
				// node's, as applied checkpoints are (its states' expiries
				// were, so Pre is compared without them).
				b.cur.Put(k, rebaseExpiry(s.Post, rec.TS, b.now().UnixMicro()))
				continue
			}
			b.cur.Set(k, s.Post)
			b.log.Warn().Str("tx", uuidString(rec.TxID)).Str("partitionId", uuidString(s.Partition)).
				Str("group", s.Group).Uint64("committed", s.Post.Committed).
				Msg("recovery: re-applied the acks of a committed transaction")
		}
	}
	pubs, err := b.applyRedoAppends(rec, true)
	if err != nil {
		return fmt.Errorf("broker: recovery of transaction %s: %w", uuidString(rec.TxID), err)
	}
	for _, x := range pubs {
		x.p.visible.Store(x.p.log.NextOffset())
	}
	if b.cfg.Replicated != nil {
		b.raiseTxCommitted(rec)
	}
	return nil
}

// sameButExpiry reports whether a and b differ at most in their lease's
// expiry: a follower's state rebased on its clock against the leader's.
func sameButExpiry(a, b lease.State) bool {
	a.Lease.ExpiresAtMicros, b.Lease.ExpiresAtMicros = 0, 0
	return a == b
}

// rebaseExpiry moves s's lease expiry, stamped by another node's clock when
// it read written (µs), onto this node's clock at now: its remaining
// duration is kept, counted from now (issue 22; cursor.Engine.ApplyCommitted
// does the same for checkpoints). A transaction's TS is read before its
// states, so the duration errs long, never short.
func rebaseExpiry(s lease.State, written, now int64) lease.State {
	if s.Lease.ExpiresAtMicros != 0 {
		s.Lease.ExpiresAtMicros += now - written
	}
	return s
}
