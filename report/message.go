package report

import (
	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/notes"
	"github.com/combmq/comb/seal"
)

// GroupPosition is one consumer group of a message's detail (spec 8.5
// consumerGroups): whether the group is done with the message (its cursor is
// at or past it), its status for that group, and the expiry of the group's
// live lease over it (0 = null).
type GroupPosition struct {
	Name                 string
	Consumed             bool
	Status               string
	CursorOffset         uint64 // the group's cursor on the partition (0 = nothing committed)
	LeaseExpiresAtMicros int64
}

// MessageDetail is GET /api/v1/messages/:partitionId/:transactionId (spec 8.5).
type MessageDetail struct {
	MessageRow
	Payload        []byte // decrypted (spec 9.2); nil with PayloadError
	PayloadError   string
	IsEncrypted    bool   // stored sealed
	ErrorMessage   string // the error of its dead-lettering; "" = null
	RetryCount     int64
	QueueConfig    broker.QueueOptions
	Mode           MessageMode
	ConsumerGroups []GroupPosition
}

// Message returns one message with its payload and its position for every
// group reading its queue. It is found through the partition's dedup index
// (findMessage): one hash lookup and one record read. Unknown, deleted or no
// longer retained → NotFound("Message not found").
func (rs *Reports) Message(partitionID, txid string) (MessageDetail, error) {
	if err := rs.v.Enter(); err != nil {
		return MessageDetail{}, err
	}
	defer rs.v.Leave()
	p, msg, err := rs.v.FindMessage(partitionID, txid)
	if err != nil {
		return MessageDetail{}, err
	}
	m := &msg
	v := rs.viewMessages(p, rs.v.Now().UnixMicro())
	if err := rs.withDLQHits(rs.v.QueueOf(p), p.ID(), func(h map[uint64][]dlqHit) {
		if hits := h[m.Offset]; len(hits) > 0 {
			v.dlq = map[uint64][]dlqHit{m.Offset: append([]dlqHit(nil), hits...)}
		}
	}); err != nil {
		return MessageDetail{}, err
	}
	conf := rs.v.QueueOf(p).Conf()
	ref := notes.MessageRef{Partition: p.ID(), Offset: m.Offset}
	d := MessageDetail{MessageRow: v.row(p, conf, m, v.status(ref)), IsEncrypted: seal.IsSealed(m.Payload),
		QueueConfig: conf.Options, Mode: queueMode(rs.v.QueueOf(p))}
	d.Payload, d.PayloadError = rs.v.QueueOf(p).OpenPayload(m.ID, m.Payload)
	d.Mode.ConsumedByGroups = d.ConsumedBy
	all := v.named
	if v.qm != nil {
		all = append([]groupView{*v.qm}, v.named...)
	}
	for i := range all {
		g := &all[i]
		gp := GroupPosition{Name: g.name, Consumed: g.has && m.Offset <= g.st.Committed,
			Status: v.groupStatus(g, ref), CursorOffset: g.st.Committed}
		if g.leases(m.Offset, v.now) {
			gp.LeaseExpiresAtMicros = g.st.Lease.ExpiresAtMicros
		}
		if g.has && g.st.Lease.Held() && m.Offset >= g.st.Lease.Start && m.Offset <= g.st.Lease.End {
			d.RetryCount = max(d.RetryCount, int64(g.st.Retries)) // failed releases charged to its span
		}
		d.ConsumerGroups = append(d.ConsumerGroups, gp)
	}
	for _, h := range v.dlq[m.Offset] {
		d.RetryCount = max(d.RetryCount, h.retries)
		if d.ErrorMessage == "" {
			d.ErrorMessage = h.err
		}
	}
	return d, nil
}
