package cursor

import (
	"fmt"
	"maps"
	"slices"
)

// MaxRecordBytes is the largest redo record AddRecord takes: a checkpoint
// frame holds at most 1 GiB, and a record must fit one with room for the
// changes around it.
const MaxRecordBytes = 256 << 20

// Record is one redo record held by the engine.
type Record struct {
	ID   uint64 // unique within the directory; DropRecord takes it
	Data []byte
}

// recOp is a record change not yet collected by a checkpoint: an add (data
// non-nil) or a drop.
type recOp struct {
	id   uint64
	data []byte
}

// AddRecord keeps a copy of an opaque redo record (the broker's transactions)
// until DropRecord(id); it is journaled with the next checkpoint (call Wait to
// make it durable) and survives snapshots and restarts until dropped.
//
// Errors: ErrRecordTooLarge for more than MaxRecordBytes (nothing kept).
func (e *Engine) AddRecord(rec []byte) (uint64, error) {
	if len(rec) > MaxRecordBytes {
		return 0, fmt.Errorf("%w: %d bytes, at most %d", ErrRecordTooLarge, len(rec), MaxRecordBytes)
	}
	rec = append(make([]byte, 0, len(rec)), rec...)
	e.recMu.Lock()
	id := e.nextRec
	e.nextRec++
	e.recs[id] = rec
	e.recOps = append(e.recOps, recOp{id: id, data: rec})
	e.recMu.Unlock()
	e.markChanged()
	return id, nil
}

// DropRecord forgets record id (unknown ids are ignored); the drop is journaled
// with the next checkpoint, after which a restart no longer recovers it. An
// add and its drop are both journaled even when no checkpoint ran in between
// (a record lives for a few checkpoints; cancelling the pair would be one
// more case to get right after a failed checkpoint requeues the add).
func (e *Engine) DropRecord(id uint64) {
	e.recMu.Lock()
	_, ok := e.recs[id]
	if ok {
		delete(e.recs, id)
		e.recOps = append(e.recOps, recOp{id: id})
	}
	e.recMu.Unlock()
	if ok {
		e.markChanged()
	}
}

// Records returns the redo records held (recovered at Open or added since, not
// dropped), by id. The Data slices must not be modified.
func (e *Engine) Records() []Record {
	e.recMu.Lock()
	defer e.recMu.Unlock()
	ids := slices.Sorted(maps.Keys(e.recs))
	out := make([]Record, len(ids))
	for i, id := range ids {
		out[i] = Record{ID: id, Data: e.recs[id]}
	}
	return out
}
