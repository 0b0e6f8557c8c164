package httpapi

import (
	"strconv"
	"strings"
	"unicode/utf8"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/names"
)

// Decoders of the three /streams/v1 bodies (spec 10; JSON snake_case). They only parse and
// check shapes; every rule about queries, state and limits is the broker's (broker/stream.go).
// The field sets are what Queen's streams runtimes send (client-go streams/runtime/protocol.go
// and runner.go, client-js client-v2/streams/runtime/*.js).

// streamQueryBody is POST /streams/v1/queries.
type streamQueryBody struct {
	Name        string `json:"name"`
	SourceQueue string `json:"source_queue"`
	SinkQueue   string `json:"sink_queue"`
	ConfigHash  string `json:"config_hash"`
	Reset       bool   `json:"reset"`
}

// streamCycleBody is POST /streams/v1/cycle. state_ops and push_items may be null or absent
// (the JS runtime sends [] for both, the Go runtime forces [] too; treat null as []).
// ReleaseLease is a pointer because its default is true.
type streamCycleBody struct {
	QueryID       string         `json:"query_id"`
	PartitionID   string         `json:"partition_id"`
	ConsumerGroup string         `json:"consumer_group"`
	StateOps      []streamOpJSON `json:"state_ops"`
	PushItems     []pushItemJSON `json:"push_items"`
	Ack           *streamAckJSON `json:"ack"`
	ReleaseLease  *bool          `json:"release_lease"`
}

// streamOpJSON is one state op. Value is the raw JSON text, copied by the decoder (the broker
// keeps it); nil when the op has no value (the Go runtime omits it on delete). Key is a pointer
// so that an op without one (absent or null) is told from the key "": both runtimes always send
// it, and an op without a key would otherwise write or delete the row "".
type streamOpJSON struct {
	Type  string          `json:"type"`
	Key   *string         `json:"key"`
	Value json.RawMessage `json:"value"`
}

// streamAckJSON is a cycle's source ack, camelCase as the clients send it.
type streamAckJSON struct {
	TransactionID string `json:"transactionId"`
	LeaseID       string `json:"leaseId"`
	Status        string `json:"status"`
	Error         string `json:"error"`
	Count         int    `json:"count"`
}

// streamStateBody is POST /streams/v1/state/get. ripe_at_or_before is epoch ms (the idle
// window flush of both runtimes sends it with key_prefix).
type streamStateBody struct {
	QueryID        string   `json:"query_id"`
	PartitionID    string   `json:"partition_id"`
	Keys           []string `json:"keys"`
	KeyPrefix      string   `json:"key_prefix"`
	RipeAtOrBefore *float64 `json:"ripe_at_or_before"`
}

// 400 messages the streams routes share.
const (
	msgStreamQueryID     = "query_id is required"
	msgStreamPartitionID = "partition_id is required"
)

// streamTypeMessage maps the path of a mistyped field to its 400 message. goccy names the
// field by its JSON path ("state_ops.3.key", "ack.count", "push_items.0.queue").
func streamTypeMessage(field string) string {
	if field == "push_items" { // /push's "items array is required" would name the wrong field
		return "push_items must be an array"
	}
	if strings.HasPrefix(field, "push_items") {
		return itemsTypeMessage(field, "push_items")
	}
	if field == "" || strings.Trim(field, "0123456789.") == "" {
		return "request body must be a JSON object"
	}
	last := field[strings.LastIndexByte(field, '.')+1:]
	switch {
	case strings.HasPrefix(field, "state_ops."):
		if strings.Trim(last, "0123456789") == "" {
			return "each state op must be an object"
		}
		return "state_ops[]." + last + " must be a string"
	case field == "state_ops":
		return "state_ops must be an array"
	case field == "keys" || strings.HasPrefix(field, "keys."):
		return "keys must be an array of strings"
	case field == "ack":
		return "ack must be an object or null"
	case strings.HasPrefix(field, "ack."):
		if last == "count" {
			return "ack.count must be an integer"
		}
		return "ack." + last + " must be a string"
	case field == "reset" || field == "release_lease":
		return field + " must be a boolean"
	case field == "ripe_at_or_before":
		return "ripe_at_or_before must be a number (epoch ms)"
	}
	return last + " must be a string"
}

// decodeStreamQuery parses and checks a registration (spec 10: 400 when name, source_queue or
// config_hash is missing or empty). msg is the 400 message, "" when valid.
func decodeStreamQuery(body []byte) (broker.StreamQueryRequest, string) {
	var in streamQueryBody
	if err := json.UnmarshalOf(body, &in); err != nil {
		return broker.StreamQueryRequest{}, decodeError(err, streamTypeMessage)
	}
	switch {
	case in.Name == "":
		return broker.StreamQueryRequest{}, "name is required"
	case in.SourceQueue == "":
		return broker.StreamQueryRequest{}, "source_queue is required"
	case in.ConfigHash == "":
		return broker.StreamQueryRequest{}, "config_hash is required"
	}
	// The queue names reach the broker's queue table: the same checks as a push's queue.
	if m := nameMsg(names.Queue, in.SourceQueue); m != "" {
		return broker.StreamQueryRequest{}, "source_queue: " + m
	}
	if in.SinkQueue != "" {
		if m := nameMsg(names.Queue, in.SinkQueue); m != "" {
			return broker.StreamQueryRequest{}, "sink_queue: " + m
		}
	}
	for _, s := range []struct{ kind, v string }{{"name", in.Name}, {"source_queue", in.SourceQueue}, {"sink_queue", in.SinkQueue}, {"config_hash", in.ConfigHash}} {
		if m := checkStreamString(s.kind, s.v, body); m != "" {
			return broker.StreamQueryRequest{}, m
		}
	}
	return broker.StreamQueryRequest{Name: in.Name, SourceQueue: in.SourceQueue, SinkQueue: in.SinkQueue,
		ConfigHash: in.ConfigHash, Reset: in.Reset}, ""
}

// checkStreamString refuses a string the decoder made valid by replacing bad UTF-8 with U+FFFD
// (checkNotReplaced): two different byte strings must never become one query name or state key.
func checkStreamString(kind, s string, body []byte) string {
	if m := checkNotReplaced(kind, s, body); m != "" {
		return kind + " must be valid UTF-8"
	}
	return ""
}

// decodeStreamCycle parses and checks a cycle (spec 10). Push items pass /push's checks (spec
// 1.2); a value absent from an upsert is {} (what Queen stores for a missing value). msg is the
// 400 message, "" when valid. ReleaseLease defaults to true.
func decodeStreamCycle(body []byte) (broker.StreamCycleRequest, string) {
	var in streamCycleBody
	if err := json.UnmarshalOf(body, &in); err != nil {
		return broker.StreamCycleRequest{}, decodeError(err, streamTypeMessage)
	}
	if in.QueryID == "" {
		return broker.StreamCycleRequest{}, msgStreamQueryID
	}
	if in.PartitionID == "" {
		return broker.StreamCycleRequest{}, msgStreamPartitionID
	}
	if m := checkGroup(in.ConsumerGroup); m != "" {
		return broker.StreamCycleRequest{}, m
	}
	if m := checkNotReplaced("Consumer group", in.ConsumerGroup, body); m != "" {
		return broker.StreamCycleRequest{}, m
	}
	req := broker.StreamCycleRequest{QueryID: in.QueryID, PartitionID: in.PartitionID, Group: in.ConsumerGroup, ReleaseLease: true}
	if in.ReleaseLease != nil {
		req.ReleaseLease = *in.ReleaseLease
	}
	req.StateOps = make([]broker.StreamStateOp, len(in.StateOps))
	for i := range in.StateOps {
		op := &in.StateOps[i]
		if op.Key == nil {
			return broker.StreamCycleRequest{}, "state_ops[" + strconv.Itoa(i) + "].key is required"
		}
		if m := checkStreamString("state key", *op.Key, body); m != "" {
			return broker.StreamCycleRequest{}, m
		}
		// op.Value is already a copy (json.RawMessage's UnmarshalJSON copies what it is given, and
		// goccy hands it the body's bytes without copying them first): the one copy of a state
		// value, which the broker's store keeps as it is (broker.StreamStateOp.Value).
		v := []byte(op.Value)
		if op.Type == "upsert" && v == nil {
			v = []byte("{}")
		}
		if op.Type == "delete" {
			v = nil // a delete's value, if any, is ignored
		}
		// The value is stored and later sent back verbatim as a row's value: bad UTF-8 in it
		// would make every state/get holding it invalid JSON (as checkPayload says of payloads).
		if !utf8.Valid(v) {
			return broker.StreamCycleRequest{}, "state_ops[" + strconv.Itoa(i) + "].value is not valid UTF-8"
		}
		req.StateOps[i] = broker.StreamStateOp{Type: op.Type, Key: *op.Key, Value: v}
	}
	items, msg := toPushItems(in.PushItems, "push_items")
	if msg == "" {
		msg = checkItemsNotReplaced(items, body)
	}
	if msg != "" {
		return broker.StreamCycleRequest{}, msg
	}
	req.Push = items
	if a := in.Ack; a != nil {
		if a.TransactionID == "" {
			return broker.StreamCycleRequest{}, "ack.transactionId is required"
		}
		if m := checkTransactionID(a.TransactionID); m != "" {
			return broker.StreamCycleRequest{}, m
		}
		if a.Count < 0 {
			return broker.StreamCycleRequest{}, "ack.count must not be negative"
		}
		req.Ack = &broker.StreamAck{TransactionID: a.TransactionID, LeaseID: a.LeaseID, Status: a.Status,
			Error: capErrorText(a.Error), Count: a.Count}
	}
	return req, ""
}

// decodeStreamState parses and checks a state read (spec 10). ripe_at_or_before becomes
// Match: keep a row only when its value is an object whose windowEnd is a number <= it (the
// clients' idle flush of tumbling and sliding windows). msg is the 400 message, "" when valid.
func decodeStreamState(body []byte) (broker.StreamStateRequest, string) {
	var in streamStateBody
	if err := json.UnmarshalOf(body, &in); err != nil {
		return broker.StreamStateRequest{}, decodeError(err, streamTypeMessage)
	}
	if in.QueryID == "" {
		return broker.StreamStateRequest{}, msgStreamQueryID
	}
	if in.PartitionID == "" {
		return broker.StreamStateRequest{}, msgStreamPartitionID
	}
	for _, k := range in.Keys {
		if m := checkStreamString("keys[]", k, body); m != "" {
			return broker.StreamStateRequest{}, m
		}
	}
	if m := checkStreamString("key_prefix", in.KeyPrefix, body); m != "" {
		return broker.StreamStateRequest{}, m
	}
	req := broker.StreamStateRequest{QueryID: in.QueryID, PartitionID: in.PartitionID, Keys: in.Keys, KeyPrefix: in.KeyPrefix}
	if in.RipeAtOrBefore != nil {
		req.Match = ripeAtOrBefore(*in.RipeAtOrBefore)
	}
	return req, ""
}

// windowEndOnly reads one field of a stored window value; other fields are skipped unparsed.
type windowEndOnly struct {
	WindowEnd *float64 `json:"windowEnd"` // a float64, not a json.Number: "5" (a string) is not a number
}

// ripeAtOrBefore returns the Match of a ripe_at_or_before filter (epoch ms): a value that is not
// an object, or whose windowEnd is absent or not a number, is not ripe. Safe for concurrent use.
func ripeAtOrBefore(ms float64) func(value []byte) bool {
	return func(value []byte) bool {
		i := 0
		for i < len(value) && (value[i] == ' ' || value[i] == '\t' || value[i] == '\n' || value[i] == '\r') {
			i++
		}
		if i == len(value) || value[i] != '{' {
			return false
		}
		var w windowEndOnly
		if json.Unmarshal(value, &w) != nil || w.WindowEnd == nil {
			return false
		}
		return *w.WindowEnd <= ms
	}
}

// streamsBadRequest answers 400 {"success":false,"error":msg}: the clients' streams runtimes read
// `error` on every failure, and success:false marks the answer as a failed call as 409 does.
func streamsBadRequest(ctx *fasthttp.RequestCtx, msg string) {
	writeStreamsError(ctx, fasthttp.StatusBadRequest, msg)
}

func writeStreamsError(ctx *fasthttp.RequestCtx, status int, msg string) {
	p := getBuf()
	b := append(*p, `{"success":false,"error":`...)
	b = appendString(b, msg)
	*p = append(b, '}')
	sendJSON(ctx, status, p)
}
