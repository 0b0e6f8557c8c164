package httpapi

import (
	"encoding/json"

	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/report"
)

// MessageBackend is what the message deletion and the trace routes ask of the broker
// (spec 8.5, 9.3); Backend embeds it. The list and detail are Reports'.
type MessageBackend interface {
	DeleteMessage(partitionID, transactionID string) (bool, error)
	AddTrace(r broker.TraceRequest) (string, error)
	Traces(partitionID, transactionID string) ([]broker.TraceEvent, error)
	TracesByName(name string, limit, offset int) ([]broker.TraceEvent, int, error)
	TraceNames(limit, offset int) ([]broker.TraceName, int, error)
}

// Page bounds of GET /api/v1/messages: they bound what one request reads
// (docs/api.md, "Messages").
const (
	defaultMessagesLimit = 200
	maxMessagesLimit     = 1000
	maxMessagesOffset    = 10000
)

type messageModeJSON struct {
	HasQueueMode     bool   `json:"hasQueueMode"`
	BusGroupsCount   int    `json:"busGroupsCount"`
	ConsumedByGroups *int   `json:"consumedByGroups,omitempty"`
	Type             string `json:"type"`
}

type busStatusJSON struct {
	ConsumedBy  int `json:"consumedBy"`
	TotalGroups int `json:"totalGroups"`
}

type messageRowJSON struct {
	ID             string          `json:"id"`
	TransactionID  string          `json:"transactionId"`
	PartitionID    string          `json:"partitionId"`
	QueuePath      string          `json:"queuePath"`
	Queue          string          `json:"queue"`
	Partition      string          `json:"partition"`
	Namespace      *string         `json:"namespace"`
	Task           *string         `json:"task"`
	Status         string          `json:"status"`
	QueueStatus    *string         `json:"queueStatus"`
	BusStatus      busStatusJSON   `json:"busStatus"`
	TraceID        *string         `json:"traceId"`
	ProducerSub    *string         `json:"producerSub"`
	QueuePriority  int64           `json:"queuePriority"`
	CreatedAt      json.RawMessage `json:"createdAt"`
	LeaseExpiresAt json.RawMessage `json:"leaseExpiresAt"`
}

type messageListJSON struct {
	Messages []messageRowJSON `json:"messages"`
	Mode     messageModeJSON  `json:"mode"`
}

// messages serves GET /api/v1/messages (spec 8.5): filters ns (the namespace), task, queue,
// partition, status, from, to (ISO-8601), limit (default 200, at most 1000) and offset (at most
// 10000); newest first, no payloads.
func (s *Server) messages(ctx *fasthttp.RequestCtx) {
	q := queryArgs{ctx.QueryArgs()}
	f := report.MessageFilter{
		Queue: q.str("queue"), Partition: q.str("partition"), Namespace: q.str("ns"), Task: q.str("task"),
		Status: q.str("status"),
		Limit:  int(min(q.integer("limit", defaultMessagesLimit), maxMessagesLimit)),
		Offset: int(min(max(q.integer("offset", 0), 0), maxMessagesOffset)),
	}
	if f.Limit < 1 {
		f.Limit = defaultMessagesLimit
	}
	for _, bound := range []struct {
		key string
		dst *int64
	}{{"from", &f.FromMicros}, {"to", &f.ToMicros}} {
		ts, ok := timeArg(ctx, q, bound.key)
		if !ok {
			return
		}
		if ts != 0 {
			*bound.dst = ts
		}
	}
	list, err := s.rep.Messages(f)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	out := messageListJSON{Messages: make([]messageRowJSON, 0, len(list.Messages)), Mode: modeJSON(list.Mode, false)}
	for i := range list.Messages {
		out.Messages = append(out.Messages, rowJSON(&list.Messages[i]))
	}
	s.sendValue(ctx, fasthttp.StatusOK, out)
}

func rowJSON(m *report.MessageRow) messageRowJSON {
	return messageRowJSON{
		ID: m.ID, TransactionID: m.TransactionID, PartitionID: m.PartitionID, QueuePath: m.Queue + "/" + m.Partition,
		Queue: m.Queue, Partition: m.Partition, Namespace: optString(m.Namespace), Task: optString(m.Task),
		Status: m.Status, QueueStatus: optString(m.QueueStatus),
		BusStatus: busStatusJSON{ConsumedBy: m.ConsumedBy, TotalGroups: m.TotalGroups},
		TraceID:   optString(m.TraceID), ProducerSub: optString(m.ProducerSub), QueuePriority: m.Priority,
		CreatedAt: isoTimeOrNull(m.CreatedAtMicros, 6), LeaseExpiresAt: isoTimeOrNull(m.LeaseExpiresAtMicros, 3),
	}
}

func modeJSON(m report.MessageMode, detail bool) messageModeJSON {
	out := messageModeJSON{HasQueueMode: m.HasQueueMode, BusGroupsCount: m.BusGroupsCount, Type: m.Type}
	if detail {
		n := m.ConsumedByGroups
		out.ConsumedByGroups = &n
	}
	return out
}

type queueConfigJSON struct {
	LeaseTime  int64 `json:"leaseTime"`
	RetryLimit int64 `json:"retryLimit"`
	RetryDelay int64 `json:"retryDelay"`
	TTL        int64 `json:"ttl"`
	Priority   int64 `json:"priority"`
}

type groupPositionJSON struct {
	Name           string          `json:"name"`
	Consumed       bool            `json:"consumed"`
	Status         string          `json:"status"`
	CursorOffset   uint64          `json:"cursorOffset"`
	LeaseExpiresAt json.RawMessage `json:"leaseExpiresAt"`
}

type messageDetailJSON struct {
	ID              string              `json:"id"`
	TransactionID   string              `json:"transactionId"`
	PartitionID     string              `json:"partitionId"`
	QueuePath       string              `json:"queuePath"`
	Queue           string              `json:"queue"`
	Partition       string              `json:"partition"`
	Namespace       *string             `json:"namespace"`
	Task            *string             `json:"task"`
	Status          string              `json:"status"`
	Payload         json.RawMessage     `json:"payload"`
	DecryptionError *string             `json:"decryptionError,omitempty"`
	IsEncrypted     bool                `json:"isEncrypted"`
	TraceID         *string             `json:"traceId"`
	ProducerSub     *string             `json:"producerSub"`
	CreatedAt       json.RawMessage     `json:"createdAt"`
	ErrorMessage    *string             `json:"errorMessage"`
	RetryCount      int64               `json:"retryCount"`
	LeaseExpiresAt  json.RawMessage     `json:"leaseExpiresAt"`
	QueueConfig     queueConfigJSON     `json:"queueConfig"`
	Mode            messageModeJSON     `json:"mode"`
	ConsumerGroups  []groupPositionJSON `json:"consumerGroups"`
}

// message serves GET /api/v1/messages/:partitionId/:transactionId (spec 8.5): the decrypted
// payload, the retry count and dead-letter error, and every group's position; unknown → 404
// {"error":"Message not found"}.
func (s *Server) message(ctx *fasthttp.RequestCtx, partitionID, txid string) {
	d, err := s.rep.Message(partitionID, txid)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	row := rowJSON(&d.MessageRow)
	out := messageDetailJSON{
		ID: row.ID, TransactionID: row.TransactionID, PartitionID: row.PartitionID, QueuePath: row.QueuePath,
		Queue: row.Queue, Partition: row.Partition, Namespace: row.Namespace, Task: row.Task, Status: row.Status,
		Payload: rawJSONOrNull(d.Payload), DecryptionError: optString(d.PayloadError), IsEncrypted: d.IsEncrypted,
		TraceID: row.TraceID, ProducerSub: row.ProducerSub, CreatedAt: row.CreatedAt,
		ErrorMessage: optString(d.ErrorMessage), RetryCount: d.RetryCount, LeaseExpiresAt: row.LeaseExpiresAt,
		QueueConfig: queueConfigJSON{LeaseTime: d.QueueConfig.LeaseTime, RetryLimit: d.QueueConfig.RetryLimit,
			RetryDelay: d.QueueConfig.RetryDelay, TTL: d.QueueConfig.TTL, Priority: d.QueueConfig.Priority},
		Mode:           modeJSON(d.Mode, true),
		ConsumerGroups: make([]groupPositionJSON, 0, len(d.ConsumerGroups)),
	}
	for _, g := range d.ConsumerGroups {
		out.ConsumerGroups = append(out.ConsumerGroups, groupPositionJSON{Name: g.Name, Consumed: g.Consumed,
			Status: g.Status, CursorOffset: g.CursorOffset, LeaseExpiresAt: isoTimeOrNull(g.LeaseExpiresAtMicros, 3)})
	}
	s.sendValue(ctx, fasthttp.StatusOK, out)
}

type deleteMessageJSON struct {
	Success       bool   `json:"success"`
	PartitionID   string `json:"partitionId"`
	TransactionID string `json:"transactionId"`
	Message       string `json:"message"`
}

// deleteMessage serves DELETE /api/v1/messages/:partitionId/:transactionId (spec 8.5): 200
// either way, success false for an unknown (or already deleted) message. The broker answers
// once the deletion is durable.
func (s *Server) deleteMessage(ctx *fasthttp.RequestCtx, partitionID, txid string) {
	found, err := s.b.DeleteMessage(partitionID, txid)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	out := deleteMessageJSON{Success: found, PartitionID: partitionID, TransactionID: txid, Message: "Message deleted successfully"}
	if !found {
		out.Message = "Message not found"
	}
	s.sendValue(ctx, fasthttp.StatusOK, out)
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// isoTimeOrNull is an ISO-8601 time (spec 0.4) or null for 0.
func isoTimeOrNull(tsMicros int64, digits int) json.RawMessage {
	return appendTimeOrNull(nil, tsMicros, digits)
}

// rawJSONOrNull passes a stored JSON value through; nil is null.
func rawJSONOrNull(b []byte) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	return b
}
