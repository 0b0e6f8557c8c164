package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
)

// Page defaults and bounds of the trace listings (spec 9.3).
const (
	defaultTracesLimit = 100
	defaultNamesLimit  = 50
	maxTracesLimit     = 1000
	// maxTraceData bounds a trace event's data (bytes of compact JSON) and
	// maxTraceNames its names: traces live in memory and in the notes file
	// until their message's retention, so one request must not hold megabytes.
	maxTraceData  = 64 << 10
	maxTraceNames = 32
)

// traceBody is POST /api/v1/traces (spec 9.3). Strings that are not strings are 400s through
// decodeError; traceNames may be a string, an array of strings or null.
type traceBody struct {
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	ConsumerGroup string          `json:"consumerGroup"`
	TraceNames    json.RawMessage `json:"traceNames"`
	EventType     string          `json:"eventType"`
	WorkerID      string          `json:"workerId"`
	Data          json.RawMessage `json:"data"`
}

// decodeTrace parses a trace body; msg is the 400 text when it is not acceptable.
func decodeTrace(body []byte) (broker.TraceRequest, string) {
	if !utf8.Valid(body) {
		// encoding/json would keep the bytes and a later GET answer invalid JSON.
		return broker.TraceRequest{}, "Invalid JSON: not valid UTF-8"
	}
	var tb traceBody
	if err := json.Unmarshal(body, &tb); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			return broker.TraceRequest{}, te.Field + " must be a " + te.Type.String()
		}
		return broker.TraceRequest{}, "Invalid JSON: " + err.Error()
	}
	if tb.TransactionID == "" || tb.PartitionID == "" {
		return broker.TraceRequest{}, "transactionId and partitionId are required"
	}
	if len(tb.Data) == 0 || bytes.Equal(tb.Data, []byte("null")) {
		return broker.TraceRequest{}, "data is required"
	}
	names, ok := traceNames(tb.TraceNames)
	if !ok {
		return broker.TraceRequest{}, "traceNames must be a string or an array of strings"
	}
	if len(names) > maxTraceNames {
		return broker.TraceRequest{}, fmt.Sprintf("traceNames: at most %d names", maxTraceNames)
	}
	for _, f := range append([]string{tb.ConsumerGroup, tb.EventType, tb.WorkerID}, names...) {
		if utf8.RuneCountInString(f) > maxNameChars {
			return broker.TraceRequest{}, fmt.Sprintf("consumerGroup, eventType, workerId and traceNames: at most %d characters each", maxNameChars)
		}
	}
	var data bytes.Buffer
	if err := json.Compact(&data, tb.Data); err != nil {
		return broker.TraceRequest{}, "Invalid JSON: " + err.Error()
	}
	if data.Len() > maxTraceData {
		return broker.TraceRequest{}, fmt.Sprintf("data: at most %d bytes of JSON, got %d", maxTraceData, data.Len())
	}
	return broker.TraceRequest{PartitionID: tb.PartitionID, TransactionID: tb.TransactionID, Group: tb.ConsumerGroup,
		EventType: tb.EventType, WorkerID: tb.WorkerID, Names: names, Data: data.Bytes()}, ""
}

// traceNames reads a string, an array of strings or null; empty names are dropped.
func traceNames(raw json.RawMessage) ([]string, bool) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, true
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, true
		}
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil {
		return nil, false
	}
	out := many[:0]
	for _, n := range many {
		if n != "" {
			out = append(out, n)
		}
	}
	return out, true
}

// addTrace serves POST /api/v1/traces (spec 9.3): 201 once the event is durable; an unknown
// message is 404 {"error":"Message not found"} (the spec's recommendation over Queen's 500).
func (s *Server) addTrace(ctx *fasthttp.RequestCtx) {
	body, ok := requireBody(ctx)
	if !ok {
		return
	}
	req, msg := decodeTrace(body)
	if msg != "" {
		badRequest(ctx, msg)
		return
	}
	id, err := s.b.AddTrace(req)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	s.sendValue(ctx, fasthttp.StatusCreated, struct {
		Success bool   `json:"success"`
		TraceID string `json:"traceId"`
	}{true, id})
}

type traceJSON struct {
	ID             string          `json:"id"`
	TransactionID  string          `json:"transaction_id,omitempty"`
	PartitionID    string          `json:"partition_id,omitempty"`
	EventType      string          `json:"event_type"`
	Data           json.RawMessage `json:"data"`
	ConsumerGroup  string          `json:"consumer_group"`
	WorkerID       *string         `json:"worker_id"`
	CreatedAt      json.RawMessage `json:"created_at"`
	QueueName      string          `json:"queue_name,omitempty"`
	PartitionName  string          `json:"partition_name,omitempty"`
	MessagePayload json.RawMessage `json:"message_payload,omitempty"`
	TraceNames     []string        `json:"trace_names"`
}

func traceToJSON(t *broker.TraceEvent, byName bool) traceJSON {
	out := traceJSON{ID: t.ID, EventType: t.EventType, Data: rawJSONOrNull(t.Data), ConsumerGroup: t.Group,
		WorkerID: optString(t.WorkerID), CreatedAt: isoTimeOrNull(t.CreatedAtMicros, 3), TraceNames: t.Names}
	if byName {
		out.TransactionID, out.PartitionID = t.TransactionID, t.PartitionID
		out.QueueName, out.PartitionName = t.Queue, t.Partition
		out.MessagePayload = rawJSONOrNull(t.MessagePayload)
	}
	return out
}

// traces serves GET /api/v1/traces/:partitionId/:transactionId (spec 9.3): snake_case, oldest
// first; a message with no events (or unknown) has an empty list.
func (s *Server) traces(ctx *fasthttp.RequestCtx, partitionID, txid string) {
	evs, err := s.b.Traces(partitionID, txid)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	out := make([]traceJSON, 0, len(evs))
	for i := range evs {
		out = append(out, traceToJSON(&evs[i], false))
	}
	s.sendValue(ctx, fasthttp.StatusOK, struct {
		Traces []traceJSON `json:"traces"`
	}{out})
}

type paginationJSON struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// tracePage reads limit (1..maxTracesLimit, def when absent or below 1) and offset (≥ 0).
func tracePage(ctx *fasthttp.RequestCtx, def int64) (int, int) {
	q := queryArgs{ctx.QueryArgs()}
	limit := min(q.integer("limit", def), maxTracesLimit)
	if limit < 1 {
		limit = def
	}
	return int(limit), int(min(max(q.integer("offset", 0), 0), 1<<31))
}

// tracesByName serves GET /api/v1/traces/by-name/:traceName (spec 9.3), newest first.
func (s *Server) tracesByName(ctx *fasthttp.RequestCtx, name string) {
	limit, offset := tracePage(ctx, defaultTracesLimit)
	evs, total, err := s.b.TracesByName(name, limit, offset)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	out := make([]traceJSON, 0, len(evs))
	for i := range evs {
		out = append(out, traceToJSON(&evs[i], true))
	}
	s.sendValue(ctx, fasthttp.StatusOK, struct {
		Traces     []traceJSON    `json:"traces"`
		Total      int            `json:"total"`
		Pagination paginationJSON `json:"pagination"`
	}{out, total, paginationJSON{limit, offset}})
}

type traceNameJSON struct {
	TraceName    string          `json:"trace_name"`
	TraceCount   int             `json:"trace_count"`
	MessageCount int             `json:"message_count"`
	LastSeen     json.RawMessage `json:"last_seen"`
}

// traceNames serves GET /api/v1/traces/names (spec 9.3), most recently seen first.
func (s *Server) traceNames(ctx *fasthttp.RequestCtx) {
	limit, offset := tracePage(ctx, defaultNamesLimit)
	names, total, err := s.b.TraceNames(limit, offset)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	out := make([]traceNameJSON, 0, len(names))
	for _, n := range names {
		out = append(out, traceNameJSON{TraceName: n.Name, TraceCount: n.Traces, MessageCount: n.Messages,
			LastSeen: isoTimeOrNull(n.LastSeenMicros, 3)})
	}
	s.sendValue(ctx, fasthttp.StatusOK, struct {
		TraceNames []traceNameJSON `json:"trace_names"`
		Total      int             `json:"total"`
		Pagination paginationJSON  `json:"pagination"`
	}{out, total, paginationJSON{limit, offset}})
}
