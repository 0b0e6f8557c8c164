package httpapi

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/names"
)

// pushBody is POST /api/v1/push (spec 1.1). bufferMs/bufferMax and any unknown field are
// ignored (spec 1.1, 11 #25); producerSub, namespace, task and messageId in items too.
type pushBody struct {
	Items []pushItemJSON `json:"items"`
}

// pushItemJSON is one item; it has no producerSub field, so a body value never reaches the
// broker (spec 1.5). Payload is a json.RawMessage: the decoder validates it and gives
// it its own copy of the bytes (never an alias of the request buffer, which fasthttp reuses),
// so the broker may keep it and stores exactly what was pushed.
type pushItemJSON struct {
	Queue         *string         `json:"queue"`
	Partition     string          `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	TransactionID string          `json:"transactionId"`
	TraceID       string          `json:"traceId"`
}

// requireBody returns the request body, or answers 400 "Empty request body" (spec 0.1) for an
// empty or all-whitespace one.
func requireBody(ctx *fasthttp.RequestCtx) ([]byte, bool) {
	body := ctx.PostBody()
	for _, c := range body {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return body, true
		}
	}
	badRequest(ctx, "Empty request body")
	return nil, false
}

// decodeError turns a goccy decode error into the spec's 400 message: a syntax error is
// "Invalid JSON: <detail>" (spec 0.1); a type error names the field through typeMessage.
func decodeError(err error, typeMessage func(field string) string) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return typeMessage(te.Field)
	}
	return "Invalid JSON: " + err.Error()
}

// pushTypeMessage maps the path of a mistyped field ("items.3.queue") to spec 1.2's messages.
func pushTypeMessage(field string) string {
	return itemsTypeMessage(field, "items")
}

// itemsTypeMessage serves push bodies and transaction push ops, whose items sit under prefix.
func itemsTypeMessage(field, prefix string) string {
	if !strings.HasPrefix(field, prefix) {
		return "items array is required"
	}
	last := field[strings.LastIndexByte(field, '.')+1:]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return "Queue must be a string" // the item itself is not an object: it has no queue
	}
	switch last {
	case "queue":
		return "Queue must be a string"
	case "partition":
		return "Partition must be a string"
	case "transactionId":
		return "TransactionId must be a string"
	case "traceId":
		return "TraceId must be a string"
	}
	return "items array is required"
}

// toPushItems validates decoded items (spec 1.2: one bad item rejects the whole request) and
// converts them. where names the items array in a payload message ("items",
// "operations[2].items"). msg is the 400 message, "" when valid.
func toPushItems(in []pushItemJSON, where string) (out []broker.PushItem, msg string) {
	return toPushItemsInto(nil, in, where)
}

// toPushItemsInto is toPushItems appending to dst[:0] (its capacity reused when it suffices).
func toPushItemsInto(dst []broker.PushItem, in []pushItemJSON, where string) (out []broker.PushItem, msg string) {
	out = dst[:0]
	if out == nil || cap(out) < len(in) {
		out = make([]broker.PushItem, 0, len(in))
	}
	out = out[:len(in)]
	for i := range in {
		it := &in[i]
		if m := checkPushItem(it.Queue, it.Partition, it.TransactionID, it.TraceID); m != "" {
			return nil, m
		}
		if m := checkPayload(it.Payload, where, i); m != "" {
			return nil, m
		}
		out[i] = broker.PushItem{
			Queue:         *it.Queue,
			Partition:     it.Partition,
			Payload:       it.Payload,
			TransactionID: it.TransactionID,
			TraceID:       it.TraceID,
		}
	}
	return out, ""
}

// checkPushItem returns the 400 message for one item's fields (spec 1.2), "" when valid; queue
// is nil when the item has none or it is not a string.
func checkPushItem(queue *string, partition, transactionID, traceID string) string {
	if queue == nil {
		return "Queue must be a string"
	}
	if m := nameMsg(names.Queue, *queue); m != "" {
		return m
	}
	// An empty partition is Default (spec 11 #28); the broker applies that.
	if partition != "" {
		if m := nameMsg(names.Partition, partition); m != "" {
			return m
		}
	}
	if m := checkTransactionID(transactionID); m != "" {
		return m
	}
	return checkTraceID(traceID)
}

// checkPayload returns the 400 message for a payload that is not valid UTF-8, "" otherwise.
//
// The decoder checks the payload's JSON syntax (control characters in strings included) but
// copies its bytes as they are, and the payload is stored and later sent as `data` verbatim: a
// stray \xff would make every pop response holding it invalid JSON (RFC 8259 8.1: JSON text is
// UTF-8), a poison message that fails the consumer's decoder at each redelivery (issue 10). One
// utf8.Valid pass over the payload bytes is the whole cost (docs/benchmarks.md). Lone surrogates
// written as escapes (`"\ud800"`) are ASCII on the wire and pass: decoders accept them.
func checkPayload(payload []byte, where string, i int) string {
	if utf8.Valid(payload) {
		return ""
	}
	at := 0
	for at < len(payload) {
		r, n := utf8.DecodeRune(payload[at:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		at += n
	}
	return "Invalid payload at " + where + "[" + strconv.Itoa(i) + "]: not valid UTF-8 (byte " + strconv.Itoa(at) + " of the payload)"
}

// decodePush parses and validates a push body (spec 1.1, 1.2). msg is the 400 message, "" when
// valid; a valid body may hold zero items.
func decodePush(body []byte) ([]broker.PushItem, string) {
	var req pushBody
	if err := json.UnmarshalOf(body, &req); err != nil {
		return nil, decodeError(err, pushTypeMessage)
	}
	if req.Items == nil {
		return nil, "items array is required"
	}
	items, msg := toPushItems(req.Items, "items")
	if msg == "" {
		msg = checkItemsNotReplaced(items, body)
	}
	if msg != "" {
		return nil, msg
	}
	return items, ""
}

// checkItemsNotReplaced refuses names the JSON decoder made valid by replacing bad UTF-8
// (checkNotReplaced).
func checkItemsNotReplaced(items []broker.PushItem, body []byte) string {
	for i := range items {
		if m := checkNotReplaced("Queue", items[i].Queue, body); m != "" {
			return m
		}
		if m := checkNotReplaced("Partition", items[i].Partition, body); m != "" {
			return m
		}
	}
	return ""
}

// push serves POST /api/v1/push: 201 with one result per item in input order (spec 1.6).
// Every item carries producerSub, the `sub` of the request's token ("" = null without auth);
// the body cannot set it (spec 1.5: anti-impersonation, with or without auth).
func (s *Server) push(ctx *fasthttp.RequestCtx, producerSub string) {
	body, ok := requireBody(ctx)
	if !ok {
		return
	}
	sc := getPushScratch()
	defer sc.release()
	items, msg := sc.decode(body)
	if msg != "" {
		badRequest(ctx, msg)
		return
	}
	if len(items) == 0 {
		p := getBuf()
		*p = append(*p, '[', ']')
		sendJSON(ctx, fasthttp.StatusCreated, p)
		return
	}
	for i := range items {
		items[i].ProducerSub = producerSub
	}
	results, err := s.b.PushInto(sc.results, items)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	if cap(results) > cap(sc.results) {
		sc.results = results
	}
	p := getBuf()
	*p = appendPushResults(*p, results)
	sendJSON(ctx, fasthttp.StatusCreated, p)
}

// appendTwice appends s as a JSON string, then key and the same JSON again (the snake_case and
// camelCase fields of one value), scanning s for escapes once.
func appendTwice(b []byte, s, key string) []byte {
	start := len(b)
	b = appendString(b, s)
	end := len(b)
	b = append(b, key...)
	return append(b, b[start:end]...)
}

// appendPushResults encodes spec 1.6: the snake_case set Queen sends plus the camelCase aliases
// transactionId and messageId (spec 11 #24); which fields appear depends on the status.
func appendPushResults(b []byte, results []broker.PushResult) []byte {
	var qName string // the last queueName written, at b[qStart:qEnd]
	var qStart, qEnd int
	b = append(b, '[')
	for i := range results {
		r := &results[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = appendInt(b, int64(i))
		b = append(b, `,"status":`...)
		b = appendString(b, r.Status.String())
		// A buffered item carries a transactionId only when the client sent one (spec 1.8).
		if r.Status != broker.PushBuffered || r.TransactionID != "" {
			b = append(b, `,"transaction_id":`...)
			b = appendTwice(b, r.TransactionID, `,"transactionId":`)
		}
		switch r.Status {
		case broker.PushQueued, broker.PushDuplicate:
			b = append(b, `,"message_id":`...)
			b = appendTwice(b, r.MessageID, `,"messageId":`)
			if r.Status == broker.PushQueued {
				b = append(b, `,"partition_id":`...)
				b = appendString(b, r.PartitionID)
				b = append(b, `,"trace_id":`...)
				b = appendStringOrNull(b, r.TraceID)
			}
			b = append(b, `,"queueName":`...)
			// Every item of a request usually names the same queue: its JSON is copied from
			// the one before rather than scanned for escapes again.
			if qEnd > qStart && r.Queue == qName {
				b = append(b, b[qStart:qEnd]...)
			} else {
				qStart = len(b)
				b = appendString(b, r.Queue)
				qEnd, qName = len(b), r.Queue
			}
		case broker.PushFailed:
			b = append(b, `,"error":`...)
			b = appendString(b, r.Error)
		case broker.PushBuffered:
			b = append(b, `,"queue":`...)
			b = appendString(b, r.Queue)
			b = append(b, `,"partition":`...)
			b = appendString(b, r.Partition)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}
