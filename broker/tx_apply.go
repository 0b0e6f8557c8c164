package broker

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/combmq/comb/walentry"

	"github.com/combmq/comb/segment"
)

// lockPartitions locks the distinct partitions of ps in id order (the one
// order every multi-partition lock holder uses) and returns them.
func lockPartitions(ps []*partition) []*partition {
	seen := make(map[*partition]bool)
	var out []*partition
	for _, p := range ps {
		if p != nil && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].id[:], out[j].id[:]) < 0 })
	for _, p := range out {
		p.mu.Lock()
	}
	return out
}

func unlockPartitions(ps []*partition) {
	for i := len(ps) - 1; i >= 0; i-- {
		ps[i].mu.Unlock()
	}
}

// applyRedoAppends appends a committed transaction's pushes and DLQ entries
// and makes them durable. With replay, records already present (found by
// transactionId, or by DLQ key) are skipped, so applying twice is harmless.
// The caller holds the touched partitions' locks (or runs inside Open).
func (b *Broker) applyRedoAppends(rec *walentry.TxRecord, replay bool) ([]published, error) {
	var touched []*partition
	var nexts []uint64
	for _, push := range rec.Pushes {
		p := b.lookupPartitionByID(push.Partition)
		if p == nil {
			continue // queue deleted since
		}
		recs := push.Recs
		if replay {
			recs = recs[:0:0]
			for _, r := range push.Recs {
				_, _, ok, err := p.log.FindTransaction(r.TransactionID)
				if err != nil {
					return nil, fmt.Errorf("queue %s partition %s: %w", p.q.name, p.name, err)
				}
				if !ok {
					recs = append(recs, r)
				}
			}
			if len(recs) == 0 {
				continue
			}
			ev := b.log.Warn()
			if b.cfg.Replicated != nil {
				ev = b.log.Debug() // a follower applies every transaction so: not news
			}
			ev.Str("tx", uuidString(rec.TxID)).Str("queue", p.q.name).Str("partition", p.name).
				Int("messages", len(recs)).Msg("recovery: re-applied the pushes of a committed transaction")
		}
		ts := max(rec.TS, p.log.LastTimestamp())
		var first uint64
		var err error
		if replay {
			// Start-up: the transaction's entry covers these; the
			// recovery flush syncs them.
			if first, err = p.log.Append(ts, recs); err == nil {
				b.committer.Mark(p.log)
			}
		} else if err = b.ensurePartitionDir(p); err == nil {
			var entry []byte
			var t walTicket
			first, err = b.appendLogged(p, ts, recs, &entry, &t)
		}
		if err != nil {
			return nil, fmt.Errorf("queue %s partition %s: append: %w", p.q.name, p.name, err)
		}
		touched = append(touched, p)
		nexts = append(nexts, first+uint64(len(recs)))
	}
	byQueue := make(map[[16]byte][]segment.Record)
	var qorder [][16]byte
	for _, d := range rec.DLQ {
		if _, ok := byQueue[d.Queue]; !ok {
			qorder = append(qorder, d.Queue)
		}
		byQueue[d.Queue] = append(byQueue[d.Queue], d.Rec)
	}
	for _, qid := range qorder {
		q := b.queueByID(qid)
		if q == nil {
			continue
		}
		if err := b.appendDLQ(q, rec.TS, byQueue[qid], replay, replay); err != nil {
			return nil, err
		}
	}
	pubs := make([]published, len(touched))
	for i, p := range touched {
		pubs[i] = published{p, nexts[i], rec.TS}
	}
	return pubs, nil
}

// partKeyed is a (partition, consumer group) whose lease a transaction released.
type partKeyed struct {
	p     *partition
	group string
}

// published is a partition whose new messages are to be published once its
// lock is released.
type published struct {
	p    *partition
	next uint64
	ts   int64
}
