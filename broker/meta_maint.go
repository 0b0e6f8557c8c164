package broker

import (
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/meta"
)

// Maintenance modes (spec 1.8, 8.8).
//
// Push maintenance: pushes are appended and group-committed exactly as
// usual, but they do not raise their partition's visible mark (publish);
// the partition goes into a held set with the offset after its newest held
// message. Switching the mode off publishes every held partition, so the
// messages become visible in push order (they are already in offset order in
// the log). Transaction pushes are held the same way.
//
// Pop maintenance: every pop answers at once with no messages (HTTP 204).
//
// Durability: both flags and, for every held partition, its published mark
// (the visible offset when it was first held) live in <data>/meta/maintenance,
// rewritten with temp file + fsync + rename + directory fsync before the
// change is answered: before a switch is acknowledged, and before the first
// push held on a partition is answered. After a crash or restart with push
// maintenance on, Open lowers each listed partition's visible mark back to
// its published mark, so held messages stay hidden until the mode is
// switched off. The file's format is package meta's (meta.MaintenanceFile),
// so comb fsck reads it with the decoder Open uses.
type maintMode struct {
	// mu is held shared by every publish while the push mode is off and
	// exclusively to switch it or hold a partition, so no push can publish
	// after a switch-on without being seen, nor be held after a switch-off
	// drained the set. Order: maintMode.mu → queue.mu; never taken with a
	// partition lock held.
	mu   sync.RWMutex
	push atomic.Bool
	pop  atomic.Bool
	held map[*partition]uint64 // partition → offset after its newest held message; under mu
}

// MaintenanceStatus is the state GET /api/v1/system/maintenance reports
// (spec 8.8). BufferedMessages counts pushed messages not yet visible.
type MaintenanceStatus struct {
	PushMaintenance  bool
	PopMaintenance   bool
	BufferedMessages int64
	HeldPartitions   int
}

const maintFile = meta.MaintenanceFile

// ErrMaintenanceFile is wrapped when <data>/meta/maintenance cannot be decoded
// (meta.ErrMaintenanceFile).
var ErrMaintenanceFile = meta.ErrMaintenanceFile

// Maintenance reports both modes and the number of held messages.
func (b *Broker) Maintenance() MaintenanceStatus {
	b.mm.mu.RLock()
	defer b.mm.mu.RUnlock()
	return b.maintStatusLocked()
}

// maintStatusLocked is the modes as GET /api/v1/system/maintenance reports
// them. The caller holds b.mm.mu (shared or exclusive).
func (b *Broker) maintStatusLocked() MaintenanceStatus {
	st := MaintenanceStatus{PushMaintenance: b.mm.push.Load(), PopMaintenance: b.mm.pop.Load()}
	for p, next := range b.mm.held {
		if p.q.deleted.Load() {
			continue // its messages went with the queue; publishing it later is a no-op
		}
		st.HeldPartitions++
		if vis := p.visible.Load(); next > vis {
			st.BufferedMessages += int64(next - vis)
		}
	}
	return st
}

// SetPushMaintenance switches push maintenance (spec 1.8). Switching it off
// makes every held message visible (and wakes parked long-polls) before it
// returns. The new mode is durable before the call returns; a failed write
// leaves the mode unchanged and returns the error.
func (b *Broker) SetPushMaintenance(on bool) (MaintenanceStatus, error) {
	if err := b.enterWrite(); err != nil {
		return MaintenanceStatus{}, err
	}
	defer b.leave()
	b.mm.mu.Lock()
	defer b.mm.mu.Unlock()
	if b.mm.push.Load() == on {
		return b.maintStatusLocked(), nil
	}
	// Off: the file says "off" before anything is published, so a crash in
	// between publishes at the next start instead of hiding what pops may
	// already have seen.
	if err := b.writeMaintLocked(on, b.mm.pop.Load()); err != nil {
		return b.maintStatusLocked(), err
	}
	b.mm.push.Store(on)
	if !on {
		held := b.mm.held
		b.mm.held = nil
		for _, p := range sortedHeld(held) {
			b.publish(p, held[p], p.log.LastTimestamp())
		}
	}
	return b.maintStatusLocked(), nil
}

// SetPopMaintenance switches pop maintenance (spec 8.8); durable on return.
func (b *Broker) SetPopMaintenance(on bool) (MaintenanceStatus, error) {
	if err := b.enterWrite(); err != nil {
		return MaintenanceStatus{}, err
	}
	defer b.leave()
	b.mm.mu.Lock()
	defer b.mm.mu.Unlock()
	if b.mm.pop.Load() != on {
		if err := b.writeMaintLocked(b.mm.push.Load(), on); err != nil {
			return b.maintStatusLocked(), err
		}
		b.mm.pop.Store(on)
	}
	return b.maintStatusLocked(), nil
}

func sortedHeld(held map[*partition]uint64) []*partition {
	out := make([]*partition, 0, len(held))
	for p := range held {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i].id[:]) < string(out[j].id[:]) })
	return out
}

// writeMaintLocked writes the maintenance file for the given flags and the
// current held set (temp + fsync + rename + directory fsync). The caller
// holds b.mm.mu exclusively.
func (b *Broker) writeMaintLocked(push, pop bool) error {
	m := meta.Maintenance{Push: push, Pop: pop, Marks: map[[16]byte]uint64{}}
	if push {
		for p := range b.mm.held {
			// Not visible alone: a push exposed before maintenance began may
			// have been claimed (write_early.go) and raise visible after this
			// write, so the mark covers what pops may already have seen.
			m.Marks[p.id] = p.claimableEnd()
		}
	}
	if err := meta.WriteMaintenance(b.fs, filepath.Join(b.dir, layout.Meta), m, b.noSync()); err != nil {
		return fmt.Errorf("broker: maintenance mode: %w", err)
	}
	return nil
}

// loadMaintMode restores the modes at Open, after every partition's visible
// mark was set to its durable end: with push maintenance on, each held
// partition's mark goes back to where it was published. Runs before the
// pending counters and ready structures are built from the visible marks.
// A missing file means both modes off.
func (b *Broker) loadMaintMode() error {
	path := filepath.Join(b.dir, layout.Meta, maintFile)
	data, err := b.fs.ReadFile(path)
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	r, err := meta.DecodeMaintenance(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	b.mm.push.Store(r.Push)
	b.mm.pop.Store(r.Pop)
	if !r.Push {
		return nil
	}
	b.mm.held = make(map[*partition]uint64, len(r.Marks))
	for id, mark := range r.Marks {
		p := b.parts[id]
		if p == nil {
			continue // its queue was deleted
		}
		next := p.log.NextOffset()
		if mark < next {
			p.visible.Store(max(mark, p.log.FirstOffset()))
			b.mm.held[p] = next
		}
	}
	if len(b.mm.held) > 0 {
		b.log.Info().Int("partitions", len(b.mm.held)).Msg("push maintenance is on: held messages stay hidden until it is switched off")
	}
	return nil
}
