package broker

import (
	"errors"
	"fmt"
	"slices"

	"github.com/combmq/comb/notes"
)

// ImportTrace is one trace event as another broker stored it (Queen's message_traces row
// with its message_trace_names): kept with its own id and time.
type ImportTrace struct {
	ID              [16]byte
	PartitionID     [16]byte
	TransactionID   string // the message's
	Group           string // "" = __QUEUE_MODE__
	EventType       string // "" = info
	WorkerID        string // "" = null
	Names           []string
	Data            []byte // the JSON value
	CreatedAtMicros int64
}

// ImportTraces records events for messages stored in their partitions (ImportMessages first),
// each durable before it returns (a Note entry of the commit log, as AddTrace writes it). An
// event whose id its message holds already is skipped (a second import adds nothing); skipped
// counts those whose message is not stored here (not imported yet, or deleted) and those past
// notes.MaxTracesPerMessage for their message (comb keeps at most that many per message).
// Errors: ErrClosed, storage errors.
func (b *Broker) ImportTraces(in []ImportTrace) (added, skipped int, err error) {
	if err := b.enterWrite(); err != nil {
		return 0, 0, err
	}
	defer b.leave()
	for i := range in {
		e := &in[i]
		fm, err := b.findMessage(uuidString(e.PartitionID), e.TransactionID)
		if errors.Is(err, ErrNotFound) {
			skipped++
			continue
		}
		if err != nil {
			return added, skipped, fmt.Errorf("trace %s of message %s: %w", uuidString(e.ID), e.TransactionID, err)
		}
		ref := notes.MessageRef{Partition: fm.p.id, Offset: fm.msg.Offset}
		have := b.msgNotes.store.Traces(ref)
		if slices.ContainsFunc(have, func(t notes.Trace) bool { return t.ID == e.ID }) {
			continue
		}
		if len(have) >= notes.MaxTracesPerMessage {
			skipped++
			continue
		}
		t := notes.Trace{MessageRef: ref, ID: e.ID, CreatedMicros: e.CreatedAtMicros, TransactionID: fm.msg.TransactionID,
			Group: e.Group, EventType: e.EventType, WorkerID: e.WorkerID, Names: e.Names, Data: e.Data}
		if t.Group == "" {
			t.Group = QueueModeGroup
		}
		if t.EventType == "" {
			t.EventType = "info"
		}
		if _, err := b.logNote(notes.EncodeTrace(&t)); err != nil {
			return added, skipped, fmt.Errorf("import trace %s: %w", uuidString(e.ID), err)
		}
		added++
	}
	return added, skipped, nil
}
