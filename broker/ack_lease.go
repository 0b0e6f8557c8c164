package broker

import (
	"context"
	"errors"

	"github.com/combmq/comb/lease"
)

// ExtendLease renews every live lease held under leaseID (spec 6):
// expiresAt = max(current, now + seconds); seconds <= 0 means 60. It never
// revives an expired lease. Durable (checkpointed) before it returns.
func (b *Broker) ExtendLease(leaseID string, seconds int64) ExtendResult {
	if err := b.enterConsume(context.Background()); err != nil {
		if errors.Is(err, ErrNotLeader) {
			return ExtendResult{Error: err.Error()}
		}
		return ExtendResult{Error: "Lease not found"}
	}
	defer b.leave()
	if seconds <= 0 {
		seconds = lease.DefaultExtendSeconds
	}
	id, ok := parseID(leaseID)
	if !ok {
		return ExtendResult{Error: "Lease not found"}
	}
	keys := b.cur.ByLease(id)
	if len(keys) == 0 {
		return ExtendResult{Error: "Lease not found"}
	}
	now := b.now().UnixMicro()
	var res ExtendResult
	var undo undoLog
	for _, k := range keys {
		p := b.lookupPartitionByID(k.Partition)
		if p == nil {
			continue
		}
		p.mu.Lock()
		st, ok := b.cur.Get(k)
		before := st
		if ok && st.Lease.ID == id && lease.Extend(&st, now, seconds) {
			b.cur.Set(k, st)
			undo.note(p, k, before, st)
			res.Renewed++
			if res.NewExpiresAtMicros == 0 || st.Lease.ExpiresAtMicros < res.NewExpiresAtMicros {
				res.NewExpiresAtMicros = st.Lease.ExpiresAtMicros
			}
		}
		p.mu.Unlock()
	}
	if res.Renewed == 0 {
		res.Error = "Lease already expired"
		return res
	}
	if err := b.cur.Wait(); err != nil {
		// A renewal nobody may rely on is undone (issue 10): the lease keeps
		// its durable expiry, and the client's retry renews it again.
		b.undoCursorChanges(undo)
		return ExtendResult{Error: err.Error(), Err: b.closedErr(err)}
	}
	return res
}
