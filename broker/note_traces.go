package broker

import (
	"errors"
	"fmt"

	"github.com/combmq/comb/notes"
	"github.com/combmq/comb/segment"
	"github.com/google/uuid"
)

// TraceRequest is POST /api/v1/traces (spec 9.3), validated by the HTTP layer.
type TraceRequest struct {
	PartitionID, TransactionID string
	Group                      string // "" = __QUEUE_MODE__
	EventType                  string // "" = info
	Names                      []string
	Data                       []byte // the JSON value as posted
	WorkerID                   string // "" = null
}

// TraceEvent is one trace event of the read routes (spec 9.3).
type TraceEvent struct {
	ID                         string
	PartitionID, TransactionID string
	Queue, Partition           string
	Group, EventType, WorkerID string
	Names                      []string
	Data                       []byte
	CreatedAtMicros            int64
	MessagePayload             []byte // by-name only: the message's decrypted payload; nil = null
}

// TraceName is one row of GET /api/v1/traces/names (spec 9.3).
type TraceName = notes.NameStat

// AddTrace records a trace event for a stored message and returns the
// event's id once it is durable (a Note entry of the commit log, in the
// group commit pushes share; then the notes store). Unknown or deleted
// message → NotFound("Message not found"); a message already holding
// notes.MaxTracesPerMessage events → BadRequest.
func (b *Broker) AddTrace(r TraceRequest) (string, error) {
	if err := b.enterWrite(); err != nil {
		return "", err
	}
	defer b.leave()
	fm, err := b.findMessage(r.PartitionID, r.TransactionID)
	if err != nil {
		return "", err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("trace id: %w", err)
	}
	if r.Group == "" {
		r.Group = QueueModeGroup
	}
	if r.EventType == "" {
		r.EventType = "info"
	}
	t := notes.Trace{MessageRef: notes.MessageRef{Partition: fm.p.id, Offset: fm.msg.Offset}, ID: id,
		CreatedMicros: b.now().UnixMicro(), TransactionID: fm.msg.TransactionID, Group: r.Group,
		EventType: r.EventType, WorkerID: r.WorkerID, Names: r.Names, Data: r.Data}
	if b.msgNotes.store.TraceCount(t.MessageRef) >= notes.MaxTracesPerMessage {
		err = notes.ErrTooManyTraces
	} else {
		_, err = b.logNote(notes.EncodeTrace(&t))
	}
	if errors.Is(err, notes.ErrTooManyTraces) {
		return "", BadRequest(fmt.Sprintf("A message keeps at most %d trace events", notes.MaxTracesPerMessage))
	}
	if err != nil {
		return "", fmt.Errorf("add trace: %w", err)
	}
	return uuidString(id), nil
}

// Traces returns a message's trace events, oldest first; none for an
// unknown or deleted message.
func (b *Broker) Traces(partitionID, txid string) ([]TraceEvent, error) {
	if err := b.enter(); err != nil {
		return nil, err
	}
	defer b.leave()
	fm, err := b.findMessage(partitionID, txid)
	if errors.Is(err, ErrNotFound) {
		return []TraceEvent{}, nil
	}
	if err != nil {
		return nil, err
	}
	ts := b.msgNotes.store.Traces(notes.MessageRef{Partition: fm.p.id, Offset: fm.msg.Offset})
	out := make([]TraceEvent, 0, len(ts))
	for i := range ts {
		out = append(out, traceEvent(fm.p, &ts[i]))
	}
	return out, nil
}

// TracesByName returns the events carrying name, newest first, one page of
// them (each with its message's payload: one record read per event) and how
// many there are.
func (b *Broker) TracesByName(name string, limit, offset int) ([]TraceEvent, int, error) {
	if err := b.enter(); err != nil {
		return nil, 0, err
	}
	defer b.leave()
	b.pruneNotes()
	ts, total := b.msgNotes.store.ByName(name, limit, offset)
	out := make([]TraceEvent, 0, len(ts))
	buf := new(segment.ReadBuffer)
	for i := range ts {
		p := b.lookupPartitionByID(ts[i].Partition)
		if p == nil {
			total-- // its partition went after the prune
			continue
		}
		ev := traceEvent(p, &ts[i])
		if msgs, err := p.log.Read(ts[i].Offset, 1, 0, buf); err == nil && len(msgs) == 1 && msgs[0].Offset == ts[i].Offset {
			if pl, perr := b.readPayload(p.q, msgs[0].ID, msgs[0].Payload); perr == "" {
				ev.MessagePayload = append([]byte(nil), pl...)
			}
		}
		out = append(out, ev)
	}
	return out, total, nil
}

// TraceNames returns the trace names, most recently seen first, one page of
// them and how many there are.
func (b *Broker) TraceNames(limit, offset int) ([]TraceName, int, error) {
	if err := b.enter(); err != nil {
		return nil, 0, err
	}
	defer b.leave()
	b.pruneNotes()
	names, total := b.msgNotes.store.Names(limit, offset)
	return names, total, nil
}

func traceEvent(p *partition, t *notes.Trace) TraceEvent {
	names := t.Names
	if names == nil {
		names = []string{}
	}
	return TraceEvent{ID: uuidString(t.ID), PartitionID: p.idStr, TransactionID: t.TransactionID,
		Queue: p.q.name, Partition: p.name, Group: t.Group, EventType: t.EventType, WorkerID: t.WorkerID,
		Names: names, Data: t.Data, CreatedAtMicros: t.CreatedMicros}
}
