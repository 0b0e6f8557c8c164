package httpapi

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/combmq/comb/broker"
)

// Messages of spec 4.1 and 4.2, verbatim.
const (
	msgAckTxRequired        = "transactionId is required"
	msgAckPartitionRequired = "partitionId is required to ensure message uniqueness"
	msgAcksRequired         = "acknowledgments array is required"
	msgBatchTxRequired      = "Each acknowledgment must have a valid transactionId string"
	msgBatchPartRequired    = "Each acknowledgment must have a valid partitionId string to ensure message uniqueness"
)

// ackMessages are the 400 messages of one ack shape: single (4.1) or batch item (4.2).
type ackMessages struct{ tx, partition string }

var (
	singleAckMessages = ackMessages{tx: msgAckTxRequired, partition: msgAckPartitionRequired}
	batchAckMessages  = ackMessages{tx: msgBatchTxRequired, partition: msgBatchPartRequired}
)

// ackFields are the fields of one acknowledgement object, each the first of its name as
// fastjson's Get would find it.
type ackFields struct{ tx, pid, status, leaseID, err *fastjson.Value }

// parseAckItem reads one acknowledgement object (spec 4.1 fields). Strings are copied into the
// request's arena, or with a nil arena alias the parser's memory. msg is the 400 message, ""
// when valid.
func parseAckItem(v *fastjson.Value, a *strArena, msgs ackMessages) (it broker.AckItem, msg string) {
	o, err := v.Object()
	if err != nil {
		return it, msgs.tx
	}
	// One pass over the keys: five Gets scanned them five times, and each Get of an absent
	// key ("error" in nearly every ack) scanned them twice.
	var f ackFields
	o.Visit(func(k []byte, x *fastjson.Value) {
		var dst **fastjson.Value
		switch string(k) {
		case "transactionId":
			dst = &f.tx
		case "partitionId":
			dst = &f.pid
		case "status":
			dst = &f.status
		case "leaseId":
			dst = &f.leaseID
		case "error":
			dst = &f.err
		default:
			return
		}
		if *dst == nil {
			*dst = x
		}
	})
	if f.tx == nil || f.tx.Type() != fastjson.TypeString || len(f.tx.GetStringBytes()) == 0 {
		return it, msgs.tx
	}
	if f.pid == nil || f.pid.Type() != fastjson.TypeString || len(f.pid.GetStringBytes()) == 0 {
		return it, msgs.partition
	}
	it.TransactionID = a.str(f.tx.GetStringBytes())
	if m := checkTransactionID(it.TransactionID); m != "" {
		return it, m
	}
	it.PartitionID = a.str(f.pid.GetStringBytes())
	var ok bool
	if it.Status, ok = arenaOptString(f.status, a); !ok {
		return it, "status must be a string"
	}
	if it.LeaseID, ok = arenaOptString(f.leaseID, a); !ok {
		return it, "leaseId must be a string"
	}
	if it.Error, ok = arenaOptString(f.err, a); !ok {
		return it, "error must be a string"
	}
	it.Error = capErrorText(it.Error)
	return it, ""
}

// maxAckErrorBytes caps an ack's `error` text, which is kept on the DLQ entry and returned by
// every DLQ read (spec 4.5: `errorMessage`). Neither the spec nor Queen's schema bounds it (a TEXT
// column), so without a cap a 5 MiB reason was stored and sent back on every DLQ page (issue 10).
// 8 KiB keeps a typical stack trace whole.
const maxAckErrorBytes = 8 << 10

// capErrorText truncates an ack's error text longer than maxAckErrorBytes at a character
// boundary and appends a marker with the original length, e.g. "…[truncated: 5242880 bytes]".
// It truncates rather than answering 400 because the reason is informational while the ack is
// not: refusing it would leave the message leased and redelivered, failing the same way each
// time. The result is at most maxAckErrorBytes plus the marker (under 40 bytes).
func capErrorText(s string) string {
	if len(s) <= maxAckErrorBytes {
		return s
	}
	cut := maxAckErrorBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut-- // do not split a multi-byte character
	}
	return s[:cut] + "…[truncated: " + strconv.Itoa(len(s)) + " bytes]"
}

// arenaOptString reads a string-or-null field into the arena; absent and null are "".
func arenaOptString(v *fastjson.Value, a *strArena) (string, bool) {
	if v == nil || v.Type() == fastjson.TypeNull {
		return "", true
	}
	if v.Type() != fastjson.TypeString {
		return "", false
	}
	return a.str(v.GetStringBytes()), true
}

// parseGroupField reads `consumerGroup` (string or null; null and "" mean __QUEUE_MODE__,
// spec 4.1, 11 #29). The group gets its own copy: the broker keys cursors by it, and a copy in
// the arena would pin the whole arena.
func parseGroupField(v *fastjson.Value) (string, string) {
	g := v.Get("consumerGroup")
	if g == nil || g.Type() == fastjson.TypeNull {
		return "", ""
	}
	if g.Type() != fastjson.TypeString {
		return "", "consumerGroup must be a string"
	}
	group := strings.Clone(b2s(g.GetStringBytes()))
	return group, checkGroup(group)
}

// decodeAck parses and validates a single ack body (spec 4.1). msg is the 400 message.
func decodeAck(body []byte) (item broker.AckItem, group, msg string) {
	parser := parserPool.Get()
	defer parserPool.Put(parser)
	v, err := parser.Parse(b2s(body))
	if err != nil {
		return item, "", "Invalid JSON: " + err.Error()
	}
	arena := newStrArena(len(body))
	if item, msg = parseAckItem(v, &arena, singleAckMessages); msg != "" {
		return item, "", msg
	}
	group, msg = parseGroupField(v)
	return item, group, msg
}

// parseAckBatchBodyInto parses and validates an ack batch body (spec 4.2) with the caller's
// parser, the items in dst's memory (parseAckBatchInto); without copyStrs the items' strings
// alias the parser's memory, valid until the parser parses again or goes back to its pool.
func parseAckBatchBodyInto(parser *fastjson.Parser, dst []broker.AckItem, body []byte, copyStrs bool) (items []broker.AckItem, group, msg string) {
	v, err := parser.Parse(b2s(body))
	if err != nil {
		return nil, "", "Invalid JSON: " + err.Error()
	}
	return parseAckBatchInto(dst, v, len(body), copyStrs)
}

// ackOne serves POST /api/v1/ack: 200 with an array of one result (spec 4.1, 11 #34).
func (s *Server) ackOne(ctx *fasthttp.RequestCtx) {
	body, ok := requireBody(ctx)
	if !ok {
		return
	}
	item, group, msg := decodeAck(body)
	if msg != "" {
		badRequest(ctx, msg)
		return
	}
	s.ack(ctx, group, []broker.AckItem{item})
}

// ackBatch serves POST /api/v1/ack/batch (spec 4.2): results in input order; [] for no items.
func (s *Server) ackBatch(ctx *fasthttp.RequestCtx) {
	body, ok := requireBody(ctx)
	if !ok {
		return
	}
	// The items alias the parser's memory (no copy of the body's strings): the parser goes back
	// to its pool once the response is encoded. Broker.Ack keeps none of the strings.
	parser := parserPool.Get()
	defer parserPool.Put(parser)
	sc := getAckScratch()
	defer sc.release()
	items, group, msg := parseAckBatchBodyInto(parser, sc.items, body, false)
	if cap(items) > cap(sc.items) {
		sc.items = items
	}
	if msg != "" {
		badRequest(ctx, msg)
		return
	}
	if len(items) == 0 {
		p := getBuf()
		*p = append(*p, '[', ']')
		sendJSON(ctx, fasthttp.StatusOK, p)
		return
	}
	s.ackWith(ctx, sc, group, items)
}

// parseAckBatchInto reads spec 4.2 into dst's memory (dst[:0], a new slice when its capacity
// is short). Any per-item consumerGroup is ignored: the top-level one applies to all items.
// Strings are copied into one arena when copyStrs is set, else alias v's parser. On a 400 the
// items are nil.
func parseAckBatchInto(dst []broker.AckItem, v *fastjson.Value, bodyLen int, copyStrs bool) (items []broker.AckItem, group, msg string) {
	if v.Type() != fastjson.TypeObject {
		return nil, "", msgAcksRequired
	}
	av := v.Get("acknowledgments")
	if av == nil || av.Type() != fastjson.TypeArray {
		return nil, "", msgAcksRequired
	}
	arr, _ := av.Array()
	if group, msg = parseGroupField(v); msg != "" {
		return nil, "", msg
	}
	var arena *strArena
	if copyStrs {
		a := newStrArena(bodyLen)
		arena = &a
	}
	if cap(dst) >= len(arr) {
		items = dst[:len(arr)]
	} else {
		items = make([]broker.AckItem, len(arr))
	}
	for i, x := range arr {
		if items[i], msg = parseAckItem(x, arena, batchAckMessages); msg != "" {
			clear(items[:i+1])
			return nil, "", msg
		}
	}
	return items, group, ""
}

func (s *Server) ack(ctx *fasthttp.RequestCtx, group string, items []broker.AckItem) {
	s.ackWith(ctx, nil, group, items)
}

// ackWith runs the ack and answers its results; sc, when not nil, lends the results slice and
// takes back the one the backend returned.
func (s *Server) ackWith(ctx *fasthttp.RequestCtx, sc *ackScratch, group string, items []broker.AckItem) {
	var dst []broker.AckResult
	if sc != nil {
		dst = sc.results
	}
	results, err := s.b.AckInto(dst, group, items)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	p := getBuf()
	*p = appendAckResults(*p, results)
	sendJSON(ctx, fasthttp.StatusOK, p)
	if sc != nil && cap(results) > cap(sc.results) {
		sc.results = results
	}
}

// appendAckResults encodes spec 4.4; empty strings are null, alreadyCommitted only when true
// (the optional flag of 4.6 step 4).
func appendAckResults(b []byte, results []broker.AckResult) []byte {
	// The results of one batch nearly all name one queue and partition: their JSON is copied
	// from the result before rather than scanned for escapes again (b[qs:qe], b[ps:pe]).
	var qName, pName string
	var qs, qe, ps, pe int
	b = append(b, '[')
	for i := range results {
		r := &results[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = appendInt(b, int64(r.Index))
		b = append(b, `,"transactionId":`...)
		b = appendString(b, r.TransactionID)
		b = append(b, `,"success":`...)
		b = appendBool(b, r.Success)
		b = append(b, `,"error":`...)
		b = appendStringOrNull(b, r.Error)
		b = append(b, `,"queueName":`...)
		if qe > qs && r.QueueName == qName {
			b = append(b, b[qs:qe]...)
		} else {
			qs = len(b)
			b = appendStringOrNull(b, r.QueueName)
			qe, qName = len(b), r.QueueName
		}
		b = append(b, `,"partitionName":`...)
		if pe > ps && r.PartitionName == pName {
			b = append(b, b[ps:pe]...)
		} else {
			ps = len(b)
			b = appendStringOrNull(b, r.PartitionName)
			pe, pName = len(b), r.PartitionName
		}
		b = append(b, `,"leaseReleased":`...)
		b = appendBool(b, r.LeaseReleased)
		b = append(b, `,"dlq":`...)
		b = appendBool(b, r.DLQ)
		if r.AlreadyCommitted {
			b = append(b, `,"alreadyCommitted":true`...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}
